//! Time zones as MySQL names them: `SYSTEM`, a fixed offset (`'+05:30'`, `'-08:00'`), or a
//! name from the time zone database (`'Europe/Paris'`, `'UTC'`), which MySQL reads from the
//! `mysql.time_zone*` tables and Quill from the tz database compiled in (`chrono-tz`), so
//! every name works without loading tables.
//!
//! Values of DATETIME and of `NOW()` are zone-less wall-clock microseconds; a zone turns
//! them into instants and back. Where wall-clock time is ambiguous (the hour a clock goes
//! back) the earlier instant is taken; where it does not exist (the hour a clock goes
//! forward) the offset in force before the change is used, so the time lands after it.
//!
//! Where it sits: `quill-sql-types`, used by the `time_zone` variable (`vars`), the session's clock
//! (`SessionInfo::utc_offset_secs`) and the time functions (`CONVERT_TZ`, `UNIX_TIMESTAMP`,
//! `FROM_UNIXTIME`).

use chrono::{NaiveDateTime, Offset, TimeZone as _};

/// Largest offset MySQL accepts for a fixed zone: `'+14:00'`.
const OFFSET_HOURS_MAX: i64 = 14;

/// One of the zones `time_zone` and `CONVERT_TZ` accept.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TimeZone {
    /// The server host's zone.
    System,
    /// A fixed offset east of UTC, in seconds.
    Offset(i64),
    /// A zone of the tz database, with its history of offsets.
    Named(chrono_tz::Tz),
}

impl TimeZone {
    /// The zone `s` names, or `None` (MySQL's error 1298 for `time_zone`, NULL for
    /// `CONVERT_TZ`). Names are matched without regard to case, as MySQL's table is.
    #[must_use]
    pub fn parse(s: &str) -> Option<TimeZone> {
        let t = s.trim();
        if t.eq_ignore_ascii_case("SYSTEM") {
            return Some(TimeZone::System);
        }
        if let Some(offset) = parse_offset(t) {
            return Some(TimeZone::Offset(offset));
        }
        chrono_tz::Tz::from_str_insensitive(t).ok().map(TimeZone::Named)
    }

    /// The zone's offset from UTC, in seconds, at the instant `utc_secs` (Unix seconds).
    #[must_use]
    pub fn offset_at_utc(self, utc_secs: i64) -> i64 {
        let Some(instant) = chrono::DateTime::from_timestamp(utc_secs, 0) else { return self.fallback_offset() };
        match self {
            TimeZone::System => i64::from(chrono::Local.offset_from_utc_datetime(&instant.naive_utc()).fix().local_minus_utc()),
            TimeZone::Offset(o) => o,
            TimeZone::Named(tz) => i64::from(tz.offset_from_utc_datetime(&instant.naive_utc()).fix().local_minus_utc()),
        }
    }

    /// The zone's offset from UTC, in seconds, for the wall-clock time `local_secs`
    /// (seconds since 1970-01-01 00:00:00 on the zone's clock).
    #[must_use]
    pub fn offset_at_local(self, local_secs: i64) -> i64 {
        let Some(local) = chrono::DateTime::from_timestamp(local_secs, 0).map(|d| d.naive_utc()) else { return self.fallback_offset() };
        match self {
            TimeZone::System => local_offset(&chrono::Local, local),
            TimeZone::Offset(o) => o,
            TimeZone::Named(tz) => local_offset(&tz, local),
        }
    }

    /// Converts zone-less microseconds on this zone's clock to `to`'s clock.
    #[must_use]
    pub fn convert_micros(self, local_us: i64, to: TimeZone) -> i64 {
        let secs = local_us.div_euclid(1_000_000);
        let utc_secs = secs - self.offset_at_local(secs);
        local_us - self.offset_at_local(secs) * 1_000_000 + to.offset_at_utc(utc_secs) * 1_000_000
    }

    /// The offset used out of chrono's range (years beyond +-262,000): none.
    fn fallback_offset(self) -> i64 {
        match self {
            TimeZone::Offset(o) => o,
            TimeZone::System | TimeZone::Named(_) => 0,
        }
    }
}

/// `[+-]H[H]:MM` within MySQL's bounds (`-13:59` to `+14:00`), in seconds.
fn parse_offset(t: &str) -> Option<i64> {
    let (sign, rest) = match t.as_bytes().first()? {
        b'+' => (1, &t[1..]),
        b'-' => (-1, &t[1..]),
        _ => return None,
    };
    let (h, m) = rest.split_once(':')?;
    if h.is_empty() || h.len() > 2 || m.len() != 2 || !h.bytes().chain(m.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (h, m): (i64, i64) = (h.parse().ok()?, m.parse().ok()?);
    let offset = sign * (h * 3600 + m * 60);
    if !(0..60).contains(&m) || offset > OFFSET_HOURS_MAX * 3600 || offset <= -OFFSET_HOURS_MAX * 3600 {
        return None;
    }
    Some(offset)
}

/// The offset of `tz` for wall-clock `local`: the earlier of two when the clock went back,
/// the one before the change when the time was skipped.
fn local_offset<Z: chrono::TimeZone>(tz: &Z, local: NaiveDateTime) -> i64 {
    match tz.offset_from_local_datetime(&local) {
        chrono::LocalResult::Single(o) | chrono::LocalResult::Ambiguous(o, _) => i64::from(o.fix().local_minus_utc()),
        chrono::LocalResult::None => {
            let before = local - chrono::Duration::hours(3);
            i64::from(tz.offset_from_utc_datetime(&before).fix().local_minus_utc())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn micros(s: &str) -> i64 {
        NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S").unwrap().and_utc().timestamp_micros()
    }

    #[test]
    fn names_offsets_and_system_are_zones_and_nothing_else_is() {
        assert_eq!(TimeZone::parse("system"), Some(TimeZone::System));
        assert_eq!(TimeZone::parse("+05:30"), Some(TimeZone::Offset(19_800)));
        assert_eq!(TimeZone::parse("-08:00"), Some(TimeZone::Offset(-28_800)));
        assert_eq!(TimeZone::parse("+14:00"), Some(TimeZone::Offset(50_400)));
        assert_eq!(TimeZone::parse("europe/paris"), Some(TimeZone::Named(chrono_tz::Tz::Europe__Paris)));
        assert!(matches!(TimeZone::parse("UTC"), Some(TimeZone::Named(_))));
        for bad in ["+14:01", "-14:00", "+5:3", "Mars/Olympus", "", "+05:60", "++5:00", "+-1:30"] {
            assert_eq!(TimeZone::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_named_zone_follows_its_daylight_saving_history() {
        let paris = TimeZone::parse("Europe/Paris").unwrap();
        let utc = TimeZone::parse("UTC").unwrap();
        // Winter: UTC+1; summer: UTC+2.
        assert_eq!(utc.convert_micros(micros("2024-01-15 12:00:00"), paris), micros("2024-01-15 13:00:00"));
        assert_eq!(utc.convert_micros(micros("2024-07-15 12:00:00"), paris), micros("2024-07-15 14:00:00"));
        assert_eq!(paris.convert_micros(micros("2024-07-15 14:00:00"), utc), micros("2024-07-15 12:00:00"));
        // 02:30 on 2024-03-31 does not exist in Paris: the winter offset carries it past the change.
        assert_eq!(paris.convert_micros(micros("2024-03-31 02:30:00"), utc), micros("2024-03-31 01:30:00"));
        // 02:30 on 2024-10-27 happens twice: the first (summer) one is taken.
        assert_eq!(paris.convert_micros(micros("2024-10-27 02:30:00"), utc), micros("2024-10-27 00:30:00"));
    }

    #[test]
    fn fixed_offsets_keep_fractions_of_a_second() {
        let east = TimeZone::Offset(3600);
        assert_eq!(TimeZone::Offset(0).convert_micros(micros("2001-01-01 01:00:00") + 250, east), micros("2001-01-01 02:00:00") + 250);
    }
}
