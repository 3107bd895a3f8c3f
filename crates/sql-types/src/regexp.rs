//! Regular expressions: `expr [NOT] REGEXP pattern` (and `RLIKE`), `REGEXP_LIKE`,
//! `REGEXP_INSTR`, `REGEXP_SUBSTR` and `REGEXP_REPLACE`, as MySQL 8 has them.
//!
//! Patterns are compiled by the `regex` crate, whose syntax covers what applications write
//! (classes, repetition, alternation, anchors, `\d`, POSIX `[[:alpha:]]`); MySQL's ICU engine
//! also has back references and look-around, which `regex` refuses (3692, as MySQL answers a
//! pattern it cannot compile). Matching is case-insensitive when the comparison collation is
//! (`utf8mb4_0900_ai_ci`, the default) and case-sensitive under a binary or `_cs` / `_bin`
//! collation, as in MySQL; the match type argument (`c`, `i`, `m`, `n`, `u`) overrides it.
//! Positions and occurrences count characters from 1.
//!
//! Each thread keeps the patterns it compiled last ([`PATTERN_CACHE_ENTRIES_MAX`]), so a
//! pattern is compiled once per statement, not once per row.

use std::cell::RefCell;

use quill_storage::{Collation, Value};
use regex::{Regex, RegexBuilder};

use crate::error::{Result, SqlError, codes};
use crate::ops;

/// Compiled patterns kept per thread.
pub const PATTERN_CACHE_ENTRIES_MAX: usize = 16;

/// Largest compiled pattern (bytes of the `regex` crate's program): past it, 3699, as MySQL
/// refuses a pattern past its own limits.
pub const PATTERN_BYTES_MAX: usize = 1 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegexpFunc {
    Like,
    Instr,
    Substr,
    Replace,
}

impl RegexpFunc {
    #[must_use]
    pub fn named(name: &str) -> Option<RegexpFunc> {
        Some(match name {
            "REGEXP_LIKE" => RegexpFunc::Like,
            "REGEXP_INSTR" => RegexpFunc::Instr,
            "REGEXP_SUBSTR" => RegexpFunc::Substr,
            "REGEXP_REPLACE" => RegexpFunc::Replace,
            _ => return None,
        })
    }

    /// Allowed argument counts.
    #[must_use]
    pub fn arity(self) -> (usize, usize) {
        match self {
            RegexpFunc::Like => (2, 3),
            RegexpFunc::Instr => (2, 6),
            RegexpFunc::Substr => (2, 5),
            RegexpFunc::Replace => (3, 6),
        }
    }
}

#[derive(Clone, PartialEq, Eq)]
struct Key {
    pattern: String,
    case_insensitive: bool,
    multi_line: bool,
    dot_all: bool,
}

thread_local! {
    static CACHE: RefCell<Vec<(Key, Regex)>> = const { RefCell::new(Vec::new()) };
}

fn compile(key: Key) -> Result<Regex> {
    CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        if let Some(i) = cache.iter().position(|(k, _)| *k == key) {
            let entry = cache.remove(i);
            let regex = entry.1.clone();
            cache.push(entry);
            return Ok(regex);
        }
        let regex = RegexBuilder::new(&key.pattern)
            .case_insensitive(key.case_insensitive)
            .multi_line(key.multi_line)
            .dot_matches_new_line(key.dot_all)
            .size_limit(PATTERN_BYTES_MAX)
            .build()
            .map_err(|e| match e {
                regex::Error::CompiledTooBig(_) => SqlError::new(codes::ER_REGEXP_TIME_OUT, "Timeout exceeded in regular expression match."),
                other => {
                    SqlError::new(codes::ER_REGEXP_BAD_INTERVAL, format!("Incorrect description of a regular expression: {}", first_line(&other.to_string())))
                }
            })?;
        if cache.len() >= PATTERN_CACHE_ENTRIES_MAX {
            cache.remove(0);
        }
        cache.push((key, regex.clone()));
        Ok(regex)
    })
}

fn first_line(s: &str) -> &str {
    s.lines().last().unwrap_or(s).trim()
}

/// The compiled pattern for `pattern` under `collation`, with a match type's flags.
///
/// # Errors
/// 3692 for a pattern `regex` cannot compile, 3693 for an unknown match type letter.
pub fn pattern(pattern: &str, collation: Collation, match_type: Option<&str>) -> Result<Regex> {
    let case_insensitive = matches!(collation, Collation::Utf8mb4AiCi | Collation::Utf8mb4GeneralCi);
    let mut key = Key { pattern: pattern.to_owned(), case_insensitive, multi_line: false, dot_all: false };
    for c in match_type.unwrap_or_default().chars() {
        match c {
            'c' => key.case_insensitive = false,
            'i' => key.case_insensitive = true,
            'm' => key.multi_line = true,
            'n' => key.dot_all = true,
            'u' => {}
            _ => return Err(SqlError::new(codes::ER_REGEXP_MAX_LT_MIN, "Incorrect arguments to regexp_like: match type")),
        }
    }
    compile(key)
}

/// `expr REGEXP pattern`: 1, 0, or NULL for a NULL operand.
///
/// # Errors
/// As [`pattern`].
pub fn matches(subject: &Value, pat: &Value, collation: Collation) -> Result<Value> {
    if subject.is_null() || pat.is_null() {
        return Ok(Value::Null);
    }
    let re = pattern(&ops::to_string_lossy(pat), collation, None)?;
    Ok(Value::Int(i64::from(re.is_match(&ops::to_string_lossy(subject)))))
}

/// The byte offset of character `position` (from 1) of `s`, or `None` past its end.
fn byte_at(s: &str, position: i64) -> Option<usize> {
    let position = usize::try_from(position).ok().filter(|p| *p >= 1)?;
    if position == s.chars().count() + 1 {
        return Some(s.len());
    }
    s.char_indices().nth(position - 1).map(|(b, _)| b)
}

/// REGEXP_LIKE / INSTR / SUBSTR / REPLACE on evaluated arguments.
///
/// # Errors
/// As [`pattern`]; 3686 for a position past the subject.
pub fn call(f: RegexpFunc, vals: &[Value], collation: Collation) -> Result<Value> {
    if vals.iter().take(if f == RegexpFunc::Replace { 3 } else { 2 }).any(Value::is_null) {
        return Ok(Value::Null);
    }
    let subject = ops::to_string_lossy(&vals[0]);
    let int = |i: usize, default: i64| vals.get(i).filter(|v| !v.is_null()).map_or(default, |v| i64::try_from(ops::to_i128(v)).unwrap_or(i64::MAX));
    let match_type_at = match f {
        RegexpFunc::Like => 2,
        RegexpFunc::Instr => 5,
        RegexpFunc::Substr => 4,
        RegexpFunc::Replace => 5,
    };
    let match_type = vals.get(match_type_at).filter(|v| !v.is_null()).map(ops::to_string_lossy);
    let re = pattern(&ops::to_string_lossy(&vals[1]), collation, match_type.as_deref())?;
    let position_at = if f == RegexpFunc::Replace { 3 } else { 2 };
    let start = if f == RegexpFunc::Like {
        0
    } else {
        byte_at(&subject, int(position_at, 1))
            .ok_or_else(|| SqlError::new(codes::ER_REGEXP_INDEX_OUTOFBOUNDS_ERROR, "Index out of bounds in regular expression search."))?
    };
    let occurrence = int(position_at + 1, if f == RegexpFunc::Replace { 0 } else { 1 }).max(0) as usize;
    let nth = |n: usize| re.find_iter(&subject[start..]).nth(n.max(1) - 1);
    Ok(match f {
        RegexpFunc::Like => Value::Int(i64::from(re.is_match(&subject))),
        RegexpFunc::Instr => {
            let after_end = int(4, 0) != 0;
            Value::Int(nth(occurrence).map_or(0, |m| {
                let at = start + if after_end { m.end() } else { m.start() };
                subject[..at].chars().count() as i64 + 1
            }))
        }
        RegexpFunc::Substr => nth(occurrence).map_or(Value::Null, |m| Value::Str(m.as_str().to_owned())),
        RegexpFunc::Replace => {
            let replacement = ops::to_string_lossy(&vals[2]);
            let tail = &subject[start..];
            // MySQL's replacement text is literal, but for `$n` group references.
            let replaced = if occurrence == 0 {
                re.replace_all(tail, replacement.as_str()).into_owned()
            } else {
                match re.find_iter(tail).nth(occurrence - 1) {
                    Some(m) => format!("{}{}{}", &tail[..m.start()], re.replace(m.as_str(), replacement.as_str()), &tail[m.end()..]),
                    None => tail.to_owned(),
                }
            };
            Value::Str(format!("{}{replaced}", &subject[..start]))
        }
    })
}
