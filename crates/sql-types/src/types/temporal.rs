//! Dates, times and datetimes as Quill holds them (days since 1970-01-01, microseconds since
//! the epoch or since midnight, zone-less): conversion to and from chrono, MySQL's text forms
//! (with fractional seconds to `fsp` digits), parsing MySQL's literals, and rounding to a
//! fractional-second precision. TIME spans MySQL's range, -838:59:59 to 838:59:59.

use chrono::{Datelike, NaiveDate, NaiveDateTime, Timelike};

pub(super) const MICROS_PER_SEC: i64 = 1_000_000;

/// MySQL's TIME range: -838:59:59 .. 838:59:59.
pub const TIME_MAX_MICROS: i64 = (838 * 3600 + 59 * 60 + 59) * MICROS_PER_SEC;

#[must_use]
pub fn date_from_days(days: i32) -> Option<NaiveDate> {
    NaiveDate::from_num_days_from_ce_opt(days)
}

#[must_use]
pub fn datetime_from_micros(us: i64) -> Option<NaiveDateTime> {
    chrono::DateTime::from_timestamp_micros(us).map(|d| d.naive_utc())
}

#[must_use]
pub fn micros_from_datetime(dt: &NaiveDateTime) -> i64 {
    dt.and_utc().timestamp_micros()
}

/// Format a date as MySQL does.
#[must_use]
pub fn format_date(days: i32) -> String {
    match date_from_days(days) {
        Some(d) => format!("{:04}-{:02}-{:02}", d.year(), d.month(), d.day()),
        None => "0000-00-00".to_owned(),
    }
}

/// Format a DATETIME with `fsp` fractional digits.
#[must_use]
pub fn format_datetime(us: i64, fsp: u8) -> String {
    let Some(dt) = datetime_from_micros(us) else { return "0000-00-00 00:00:00".to_owned() };
    let mut s = format!("{:04}-{:02}-{:02} {:02}:{:02}:{:02}", dt.year(), dt.month(), dt.day(), dt.hour(), dt.minute(), dt.second());
    push_fraction(&mut s, i64::from(dt.nanosecond() / 1000), fsp);
    s
}

pub(super) fn push_fraction(s: &mut String, micros: i64, fsp: u8) {
    if fsp > 0 {
        let digits = format!("{micros:06}");
        s.push('.');
        s.push_str(&digits[..fsp as usize]);
    }
}

/// Format a TIME with `fsp` fractional digits.
#[must_use]
pub fn format_time(us: i64, fsp: u8) -> String {
    let neg = us < 0;
    let a = us.unsigned_abs() as i64;
    let secs = a / MICROS_PER_SEC;
    let mut s = format!("{}{:02}:{:02}:{:02}", if neg { "-" } else { "" }, secs / 3600, (secs / 60) % 60, secs % 60);
    push_fraction(&mut s, a % MICROS_PER_SEC, fsp);
    s
}

/// Parse 'YYYY-MM-DD', 'YYYY-MM-DD HH:MM:SS[.ffffff]', 'YYYYMMDD[HHMMSS]' and
/// 'YYYY-MM-DDTHH:MM:SS'. Returns microseconds since the epoch and whether the
/// text had a time part.
#[must_use]
pub fn parse_datetime(s: &str) -> Option<(i64, bool)> {
    let s = s.trim();
    let (date_part, time_part) = match s.find([' ', 'T']) {
        Some(i) => (&s[..i], Some(s[i + 1..].trim())),
        None => (s, None),
    };
    let nums: Vec<&str> = date_part.split(['-', '/', '.']).collect();
    let (y, m, d, rest_time) = if nums.len() == 3 {
        (nums[0].parse::<i32>().ok()?, nums[1].parse::<u32>().ok()?, nums[2].parse::<u32>().ok()?, time_part)
    } else if nums.len() == 1 && date_part.len() >= 8 && date_part.bytes().all(|b| b.is_ascii_digit()) && time_part.is_none() {
        let y = date_part[0..4].parse().ok()?;
        let m = date_part[4..6].parse().ok()?;
        let d = date_part[6..8].parse().ok()?;
        let t = &date_part[8..];
        if t.is_empty() {
            (y, m, d, None)
        } else if t.len() == 6 {
            let us = (t[0..2].parse::<i64>().ok()? * 3600 + t[2..4].parse::<i64>().ok()? * 60 + t[4..6].parse::<i64>().ok()?) * MICROS_PER_SEC;
            let base = NaiveDate::from_ymd_opt(y, m, d)?.and_hms_opt(0, 0, 0)?;
            return Some((micros_from_datetime(&base) + us, true));
        } else {
            return None;
        }
    } else {
        return None;
    };
    let y = if nums.len() == 3 && nums[0].len() <= 2 { if y < 70 { 2000 + y } else { 1900 + y } } else { y };
    let date = NaiveDate::from_ymd_opt(y, m, d)?;
    let mut us = micros_from_datetime(&date.and_hms_opt(0, 0, 0)?);
    let has_time = rest_time.is_some_and(|t| !t.is_empty());
    if let Some(t) = rest_time.filter(|t| !t.is_empty()) {
        let tm = parse_time(t)?;
        if !(0..24 * 3600 * MICROS_PER_SEC).contains(&tm) {
            return None;
        }
        us += tm;
    }
    Some((us, has_time))
}

/// Parse '[-][D ]HH:MM[:SS[.ffffff]]', 'HHMMSS' or 'SS'. Returns signed microseconds.
#[must_use]
pub fn parse_time(s: &str) -> Option<i64> {
    let s = s.trim();
    let (neg, s) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let (days, s) = match s.split_once(' ') {
        Some((d, r)) => (d.parse::<i64>().ok()?, r),
        None => (0, s),
    };
    let (whole, frac) = match s.split_once('.') {
        Some((w, f)) => (w, f),
        None => (s, ""),
    };
    let parts: Vec<&str> = whole.split(':').collect();
    let (h, m, sec) = match parts.len() {
        3 => (parts[0].parse::<i64>().ok()?, parts[1].parse::<i64>().ok()?, parts[2].parse::<i64>().ok()?),
        2 => (parts[0].parse::<i64>().ok()?, parts[1].parse::<i64>().ok()?, 0),
        1 if whole.bytes().all(|b| b.is_ascii_digit()) && !whole.is_empty() => {
            let n: i64 = whole.parse().ok()?;
            (n / 10000, (n / 100) % 100, n % 100)
        }
        _ => return None,
    };
    if m > 59 || sec > 59 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut micros: i64 = 0;
    for (i, b) in frac.bytes().take(6).enumerate() {
        micros += i64::from(b - b'0') * 10i64.pow(5 - i as u32);
    }
    let total = ((days * 24 + h) * 3600 + m * 60 + sec) * MICROS_PER_SEC + micros;
    Some(if neg { -total } else { total })
}

/// Round microseconds to `fsp` digits (MySQL rounds, it does not truncate).
#[must_use]
pub fn round_micros(us: i64, fsp: u8) -> i64 {
    if fsp >= 6 {
        return us;
    }
    let unit = 10i64.pow(6 - u32::from(fsp));
    // Half away from zero, for negative TIME values too.
    let magnitude = us.unsigned_abs() as i64;
    let r = magnitude % unit;
    let rounded = if r * 2 >= unit { magnitude - r + unit } else { magnitude - r };
    if us < 0 { -rounded } else { rounded }
}

/// Days-from-CE of the date part of a DATETIME.
#[must_use]
pub fn date_of_micros(us: i64) -> i32 {
    datetime_from_micros(us).map_or(0, |d| d.date().num_days_from_ce())
}

/// Microseconds of midnight of a date.
#[must_use]
pub fn micros_of_date(days: i32) -> i64 {
    date_from_days(days).and_then(|d| d.and_hms_opt(0, 0, 0)).map_or(0, |d| micros_from_datetime(&d))
}
