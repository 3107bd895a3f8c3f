//! Date and time functions: NOW and its kin (the statement's clock, `Env::now_us`), date
//! arithmetic (DATE_ADD, TIMESTAMPDIFF, DATEDIFF), parts of a date (YEAR, MONTH, ...),
//! DATE_FORMAT, UNIX_TIMESTAMP / FROM_UNIXTIME (within MySQL's TIMESTAMP range) and CONVERT_TZ.

use chrono::{Datelike, Duration, Months, NaiveDateTime, Timelike};
use quill_sql_types::error::Result;
use quill_sql_types::ops;
use quill_sql_types::types::{self};
use quill_storage::Decimal;
use quill_storage::Value;

use crate::query::Env;

use super::{Func, Unit, int_arg, str_arg};

/// Evaluates `f`, one of this family, on its arguments' values.
pub(super) fn call(f: Func, vals: &[Value], env: &Env<'_>) -> Result<Value> {
    use Func::*;
    let info = env.info;
    Ok(match f {
        Now(fsp) => Value::DateTime(types::round_micros(env.now_us, fsp)),
        SysDate(fsp) => Value::DateTime(types::round_micros(info.now_us(), fsp)),
        UtcTimestamp(fsp) => Value::DateTime(types::round_micros(chrono::Utc::now().timestamp_micros(), fsp)),
        CurDate => Value::Date(types::date_of_micros(env.now_us)),
        CurTime(fsp) => Value::Time(types::round_micros(env.now_us.rem_euclid(86_400_000_000), fsp)),
        UnixTimestamp => match vals.first() {
            None => Value::Int(env.now_us.div_euclid(1_000_000) - info.utc_offset_secs()),
            Some(Value::Null) => Value::Null,
            Some(v) => match ops::to_datetime(v) {
                Some(us) => {
                    let local_secs = us.div_euclid(1_000_000);
                    let secs = local_secs - info.time_zone().offset_at_local(local_secs);
                    let frac = us.rem_euclid(1_000_000);
                    if frac == 0 && !matches!(v, Value::DateTime(_)) { Value::Int(secs) } else { Value::Decimal(Decimal::new(secs * 1_000_000 + frac, 6)) }
                }
                None => Value::Null,
            },
        },
        FromUnixtime => {
            let secs = int_arg(&vals[0]);
            Value::DateTime((secs + info.time_zone().offset_at_utc(secs)) * 1_000_000)
        }
        ConvertTz => convert_tz(vals),
        Uuid => Value::Str(uuid_v1()),
        TimestampDiff(unit) => match (ops::to_datetime(&vals[0]), ops::to_datetime(&vals[1])) {
            (Some(a), Some(b)) => Value::Int(timestamp_diff(unit, a, b)),
            _ => Value::Null,
        },
        DateDiff => match (ops::to_date_days(&vals[0]), ops::to_date_days(&vals[1])) {
            (Some(a), Some(b)) => Value::Int(i64::from(a) - i64::from(b)),
            _ => Value::Null,
        },
        DateAdd(unit, subtract) => date_add(&vals[0], &vals[1], unit, subtract)?,
        Date => ops::to_date_days(&vals[0]).map_or(Value::Null, Value::Date),
        Time => ops::to_time(&vals[0]).map_or(Value::Null, Value::Time),
        Year | Month | Day | Hour | Minute | Second | Microsecond | DayOfWeek => {
            let dt = match &vals[0] {
                Value::Time(us) => {
                    let a = us.abs();
                    return Ok(Value::Int(match f {
                        Hour => a / 3_600_000_000,
                        Minute => (a / 60_000_000) % 60,
                        Second => (a / 1_000_000) % 60,
                        Microsecond => a % 1_000_000,
                        _ => 0,
                    }));
                }
                v => match ops::to_datetime(v).and_then(types::datetime_from_micros) {
                    Some(dt) => dt,
                    None => return Ok(Value::Null),
                },
            };
            Value::Int(match f {
                Year => i64::from(dt.year()),
                Month => i64::from(dt.month()),
                Day => i64::from(dt.day()),
                Hour => i64::from(dt.hour()),
                Minute => i64::from(dt.minute()),
                Second => i64::from(dt.second()),
                Microsecond => i64::from(dt.nanosecond() / 1000),
                _ => i64::from(dt.weekday().number_from_sunday()),
            })
        }
        Weekday | DayOfYear | Quarter | Week | YearWeek => {
            let Some(date) = ops::to_datetime(&vals[0]).and_then(types::datetime_from_micros).map(|dt| dt.date()) else {
                return Ok(Value::Null);
            };
            let mode = vals.get(1).map_or(0, int_arg);
            Value::Int(match f {
                Weekday => i64::from(date.weekday().num_days_from_monday()),
                DayOfYear => i64::from(date.ordinal()),
                Quarter => i64::from((date.month() - 1) / 3 + 1),
                Week => i64::from(week(date, week_mode(mode)).0),
                _ => {
                    let (week, year) = week(date, week_mode(mode) | WEEK_YEAR);
                    i64::from(year) * 100 + i64::from(week)
                }
            })
        }
        TimeToSec => match ops::to_time(&vals[0]) {
            Some(us) if us % 1_000_000 == 0 => Value::Int(us / 1_000_000),
            // As many fractional digits as the seconds need (MySQL's follow the argument's).
            Some(us) => {
                let (mut num, mut scale) = (us, 6);
                while num % 10 == 0 {
                    num /= 10;
                    scale -= 1;
                }
                Value::Decimal(Decimal::new(num, scale))
            }
            None => Value::Null,
        },
        MakeDate => {
            let (year, day) = (int_arg(&vals[0]), int_arg(&vals[1]));
            // Two-digit years as MySQL reads them: 0-69 are 2000-2069, 70-99 are 1970-1999.
            let year = match year {
                0..=69 => year + 2000,
                70..=99 => year + 1900,
                y => y,
            };
            let date = (day > 0 && (0..=9999).contains(&year))
                .then(|| chrono::NaiveDate::from_yo_opt(year as i32, 1))
                .flatten()
                .and_then(|jan1| jan1.checked_add_signed(Duration::days(day - 1)))
                .filter(|d| d.year() <= 9999);
            match date {
                Some(d) => Value::Date(d.num_days_from_ce()),
                None => Value::Null,
            }
        }
        // A TIME is a time of today, as MySQL reads it as a date (Django's Trunc on a time field).
        DateFormat => match time_as_datetime(&vals[0], env.now_us).or_else(|| ops::to_datetime(&vals[0])).and_then(types::datetime_from_micros) {
            Some(dt) => Value::Str(date_format(&dt, &str_arg(&vals[1]))),
            None => Value::Null,
        },
        TemporalText(fsp) => match &vals[0] {
            Value::DateTime(us) => Value::Str(types::format_datetime(*us, fsp)),
            Value::Time(us) => Value::Str(types::format_time(*us, fsp)),
            other => Value::Str(str_arg(other)),
        },
        _ => unreachable!("{f:?} is dispatched elsewhere"),
    })
}

pub(super) fn timestamp_diff(unit: Unit, a: i64, b: i64) -> i64 {
    let d = b - a;
    match unit {
        Unit::Microsecond => d,
        Unit::Second => d / 1_000_000,
        Unit::Minute => d / 60_000_000,
        Unit::Hour => d / 3_600_000_000,
        Unit::Day => d / 86_400_000_000,
        Unit::Week => d / (7 * 86_400_000_000),
        Unit::Month | Unit::Quarter | Unit::Year => {
            let (Some(x), Some(y)) = (types::datetime_from_micros(a), types::datetime_from_micros(b)) else { return 0 };
            let mut months = i64::from(y.year() - x.year()) * 12 + i64::from(y.month()) - i64::from(x.month());
            // A month only counts once the day and time of day have been reached.
            let rest = |t: &NaiveDateTime| (t.day(), t.time());
            if months > 0 && rest(&y) < rest(&x) {
                months -= 1;
            } else if months < 0 && rest(&y) > rest(&x) {
                months += 1;
            }
            match unit {
                Unit::Month => months,
                Unit::Quarter => months / 3,
                _ => months / 12,
            }
        }
    }
}

pub(super) fn date_add(base: &Value, amount: &Value, unit: Unit, subtract: bool) -> Result<Value> {
    let is_date = matches!(base, Value::Date(_)) || matches!(base, Value::Str(s) if types::parse_datetime(s).is_some_and(|(_, t)| !t));
    let Some(us) = ops::to_datetime(base) else { return Ok(Value::Null) };
    let Some(dt) = types::datetime_from_micros(us) else { return Ok(Value::Null) };
    let n = match unit {
        Unit::Microsecond | Unit::Second => ops::to_decimal(amount).unwrap_or_default(),
        _ => Decimal::from(int_arg(amount)),
    };
    let n = if subtract { -n } else { n };
    let out = match unit {
        Unit::Month | Unit::Quarter | Unit::Year => {
            let months = n.to_i64().unwrap_or(0)
                * match unit {
                    Unit::Month => 1,
                    Unit::Quarter => 3,
                    _ => 12,
                };
            if months >= 0 { dt.checked_add_months(Months::new(months as u32)) } else { dt.checked_sub_months(Months::new((-months) as u32)) }
        }
        _ => {
            let micros = match unit {
                Unit::Microsecond => n,
                Unit::Second => n * Decimal::from(1_000_000),
                Unit::Minute => n * Decimal::from(60_000_000),
                Unit::Hour => n * Decimal::from(3_600_000_000i64),
                Unit::Day => n * Decimal::from(86_400_000_000i64),
                _ => n * Decimal::from(7 * 86_400_000_000i64),
            };
            dt.checked_add_signed(Duration::microseconds(micros.to_i64().unwrap_or(0)))
        }
    };
    let Some(out) = out else { return Ok(Value::Null) };
    let us = types::micros_from_datetime(&out);
    Ok(if is_date && matches!(unit, Unit::Day | Unit::Week | Unit::Month | Unit::Quarter | Unit::Year) {
        Value::Date(types::date_of_micros(us))
    } else {
        Value::DateTime(us)
    })
}

pub(super) fn date_format(dt: &NaiveDateTime, fmt: &str) -> String {
    let mut out = String::new();
    let mut chars = fmt.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('Y') => out.push_str(&format!("{:04}", dt.year())),
            Some('y') => out.push_str(&format!("{:02}", dt.year() % 100)),
            Some('m') => out.push_str(&format!("{:02}", dt.month())),
            Some('c') => out.push_str(&dt.month().to_string()),
            Some('d') => out.push_str(&format!("{:02}", dt.day())),
            Some('e') => out.push_str(&dt.day().to_string()),
            Some('H') => out.push_str(&format!("{:02}", dt.hour())),
            Some('k') => out.push_str(&dt.hour().to_string()),
            Some('i') => out.push_str(&format!("{:02}", dt.minute())),
            Some('s' | 'S') => out.push_str(&format!("{:02}", dt.second())),
            Some('f') => out.push_str(&format!("{:06}", dt.nanosecond() / 1000)),
            Some('T') => out.push_str(&format!("{:02}:{:02}:{:02}", dt.hour(), dt.minute(), dt.second())),
            Some('M') => out.push_str(&dt.format("%B").to_string()),
            Some('b') => out.push_str(&dt.format("%b").to_string()),
            Some('W') => out.push_str(&dt.format("%A").to_string()),
            Some('a') => out.push_str(&dt.format("%a").to_string()),
            Some('j') => out.push_str(&format!("{:03}", dt.ordinal())),
            Some('p') => out.push_str(if dt.hour() < 12 { "AM" } else { "PM" }),
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

/// A TIME value as the DATETIME it is today (`now_us`'s date plus the time).
pub(super) fn time_as_datetime(v: &Value, now_us: i64) -> Option<i64> {
    const DAY_US: i64 = 86_400_000_000;
    match v {
        Value::Time(us) => Some(now_us - now_us.rem_euclid(DAY_US) + us),
        _ => None,
    }
}

/// CONVERT_TZ(dt, from, to): NULL for a zone it does not know or a value that is not a
/// date and time; a value outside TIMESTAMP's range is returned as it is, as MySQL does.
pub(super) fn convert_tz(vals: &[Value]) -> Value {
    use quill_sql_types::time_zone::TimeZone;
    let (Some(us), Some(from), Some(to)) = (ops::to_datetime(&vals[0]), TimeZone::parse(&str_arg(&vals[1])), TimeZone::parse(&str_arg(&vals[2]))) else {
        return Value::Null;
    };
    let local_secs = us.div_euclid(1_000_000);
    let utc_secs = local_secs - from.offset_at_local(local_secs);
    if !(TIMESTAMP_SECS_MIN..=TIMESTAMP_SECS_MAX).contains(&utc_secs) {
        return Value::DateTime(us);
    }
    Value::DateTime(from.convert_micros(us, to))
}

/// TIMESTAMP's range in Unix seconds: 1970-01-01 00:00:01 to 2038-01-19 03:14:07 UTC.
pub(super) const TIMESTAMP_SECS_MIN: i64 = 1;

pub(super) const TIMESTAMP_SECS_MAX: i64 = i32::MAX as i64;

/// A version-1 UUID as MySQL's UUID() writes it: the time in 100 ns steps since
/// 1582-10-15, then a clock sequence and a node, both random per server start (MySQL takes
/// the node from a network card when it can). Calls never repeat: a time at or before the
/// last one given is moved one step past it.
pub(super) fn uuid_v1() -> String {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicU64, Ordering};
    /// 100 ns steps from 1582-10-15 to 1970-01-01.
    const GREGORIAN_TO_UNIX_STEPS: u64 = 0x01B2_1DD2_1381_4000;
    static LAST: AtomicU64 = AtomicU64::new(0);
    static NODE: OnceLock<(u64, u64)> = OnceLock::new();
    let &(clock_seq, node) = NODE.get_or_init(|| (rand::random::<u64>() & 0x3FFF | 0x8000, rand::random::<u64>() & 0xFFFF_FFFF_FFFF | 0x0100_0000_0000));
    let now = GREGORIAN_TO_UNIX_STEPS + u64::try_from(chrono::Utc::now().timestamp_nanos_opt().unwrap_or(0) / 100).unwrap_or(0);
    let t = match LAST.fetch_update(Ordering::AcqRel, Ordering::Acquire, |last| Some(now.max(last + 1))) {
        Ok(last) | Err(last) => now.max(last + 1),
    };
    format!("{:08x}-{:04x}-{:04x}-{clock_seq:04x}-{node:012x}", t & 0xFFFF_FFFF, (t >> 32) & 0xFFFF, (t >> 48) & 0x0FFF | 0x1000)
}

/// WEEK's mode bits (MySQL's `calc_week`): weeks start on Monday; the week's year may be the
/// one before or after (1-53 rather than 0-53); week 1 is the first week with a first day of
/// the week in the year (rather than the first with four days or more in it).
const WEEK_MONDAY_FIRST: u32 = 1;
const WEEK_YEAR: u32 = 2;
const WEEK_FIRST_WEEKDAY: u32 = 4;

/// The bits of WEEK's `mode` (0-7): modes 0, 2, 4 and 6 start weeks on Sunday, and of those the
/// Sunday-first modes count week 1 from the first Sunday (the "first weekday" bit is flipped
/// for them, as MySQL does).
fn week_mode(mode: i64) -> u32 {
    let mut bits = (mode & 7) as u32;
    if bits & WEEK_MONDAY_FIRST == 0 {
        bits ^= WEEK_FIRST_WEEKDAY;
    }
    bits
}

/// The week of `date` under `bits`, and the year that week belongs to. Week 0 is the days
/// before week 1 when the week's year must be the date's own.
fn week(date: chrono::NaiveDate, bits: u32) -> (u32, i32) {
    let monday_first = bits & WEEK_MONDAY_FIRST != 0;
    let mut week_year = bits & WEEK_YEAR != 0;
    let first_weekday = bits & WEEK_FIRST_WEEKDAY != 0;
    let days_in = |y: i32| if chrono::NaiveDate::from_ymd_opt(y, 2, 29).is_some() { 366 } else { 365 };
    let mut year = date.year();
    let daynr = i64::from(date.num_days_from_ce());
    let jan1 = date.with_ordinal(1).expect("every year has a first day");
    let mut first_daynr = i64::from(jan1.num_days_from_ce());
    // The weekday of January 1: 0 for the week's first day.
    let mut weekday = i64::from(if monday_first { jan1.weekday().num_days_from_monday() } else { jan1.weekday().num_days_from_sunday() });
    let late_start = |weekday: i64| (first_weekday && weekday != 0) || (!first_weekday && weekday >= 4);
    if date.month() == 1 && i64::from(date.day()) <= 7 - weekday {
        if !week_year && late_start(weekday) {
            return (0, year);
        }
        week_year = true;
        year -= 1;
        let days = days_in(year);
        first_daynr -= days;
        weekday = (weekday + 53 * 7 - days) % 7;
    }
    let days = if late_start(weekday) { daynr - (first_daynr + (7 - weekday)) } else { daynr - (first_daynr - weekday) };
    if week_year && days >= 52 * 7 {
        let next = (weekday + days_in(year)) % 7;
        if !late_start(next) {
            return (1, year + 1);
        }
    }
    ((days / 7 + 1) as u32, year)
}
