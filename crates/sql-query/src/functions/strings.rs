//! String functions: CONCAT, SUBSTRING, TRIM, LPAD, REPLACE, INSERT, LOCATE, HEX, the digests
//! (MD5, SHA1, SHA2: the `md-5`, `sha1` and `sha2` crates) and their kin,
//! evaluated on their arguments' values (NULL arguments were handled by `call`). A function that
//! builds a large result was checked against `max_allowed_packet` before it runs (`built_bytes`).

use quill_sql_types::error::Result;
use quill_sql_types::ops;
use quill_storage::{Collation, Value};

use sha2::Digest;

use super::{Func, int_arg, str_arg};

/// Evaluates `f`, one of this family, on its arguments' values.
pub(super) fn call(f: Func, vals: &[Value]) -> Result<Value> {
    use Func::*;
    Ok(match f {
        Concat => {
            if vals.iter().any(|v| matches!(v, Value::Bytes(_))) {
                Value::Bytes(vals.iter().flat_map(ops::to_bytes).collect())
            } else {
                Value::Str(vals.iter().map(str_arg).collect())
            }
        }
        ConcatWs => {
            if vals[0].is_null() {
                return Ok(Value::Null);
            }
            let sep = str_arg(&vals[0]);
            Value::Str(vals[1..].iter().filter(|v| !v.is_null()).map(str_arg).collect::<Vec<_>>().join(&sep))
        }
        Char => Value::Bytes(
            vals.iter()
                .filter(|v| !v.is_null())
                .flat_map(|v| {
                    let bytes = (ops::to_i128(v) as u32).to_be_bytes();
                    let first = bytes.iter().position(|&b| b != 0).unwrap_or(3);
                    bytes[first..].to_vec()
                })
                .collect(),
        ),
        Length => Value::Int(ops::to_bytes(&vals[0]).len() as i64),
        CharLength => Value::Int(match &vals[0] {
            Value::Bytes(b) => b.len() as i64,
            v => str_arg(v).chars().count() as i64,
        }),
        Substring => {
            let s: Vec<char> = str_arg(&vals[0]).chars().collect();
            let pos = int_arg(&vals[1]);
            let len = vals.get(2).map_or(i64::MAX, int_arg);
            let start = if pos > 0 {
                pos - 1
            } else if pos < 0 {
                s.len() as i64 + pos
            } else {
                return Ok(Value::Str(String::new()));
            };
            if start < 0 || start as usize >= s.len() || len <= 0 {
                return Ok(Value::Str(String::new()));
            }
            let end = (start as usize).saturating_add(len.min(s.len() as i64) as usize).min(s.len());
            Value::Str(s[start as usize..end].iter().collect())
        }
        Left | Right => {
            let s: Vec<char> = str_arg(&vals[0]).chars().collect();
            let n = int_arg(&vals[1]).clamp(0, s.len() as i64) as usize;
            Value::Str(if f == Left { s[..n].iter().collect() } else { s[s.len() - n..].iter().collect() })
        }
        Lower => Value::Str(str_arg(&vals[0]).to_lowercase()),
        // Characters whose upper case is several characters (ß) stay as they are, as in MySQL.
        Upper => Value::Str(
            str_arg(&vals[0])
                .chars()
                .map(|c| {
                    let mut up = c.to_uppercase();
                    match (up.next(), up.next()) {
                        (Some(u), None) => u,
                        _ => c,
                    }
                })
                .collect(),
        ),
        Trim => Value::Str(str_arg(&vals[0]).trim_matches(' ').to_owned()),
        LTrim => Value::Str(str_arg(&vals[0]).trim_start_matches(' ').to_owned()),
        RTrim => Value::Str(str_arg(&vals[0]).trim_end_matches(' ').to_owned()),
        TrimChars(which) => {
            let (pat, s) = (str_arg(&vals[0]), str_arg(&vals[1]));
            let mut out = s.as_str();
            if !pat.is_empty() {
                if which != 2 {
                    while let Some(r) = out.strip_prefix(pat.as_str()) {
                        out = r;
                    }
                }
                if which != 1 {
                    while let Some(r) = out.strip_suffix(pat.as_str()) {
                        out = r;
                    }
                }
            }
            Value::Str(out.to_owned())
        }
        Replace => {
            let (s, from, to) = (str_arg(&vals[0]), str_arg(&vals[1]), str_arg(&vals[2]));
            Value::Str(if from.is_empty() { s } else { s.replace(&from, &to) })
        }
        Lpad | Rpad => {
            let s: Vec<char> = str_arg(&vals[0]).chars().collect();
            let n = int_arg(&vals[1]);
            if n < 0 {
                return Ok(Value::Null);
            }
            let n = n as usize;
            let pad: Vec<char> = str_arg(&vals[2]).chars().collect();
            if s.len() >= n {
                return Ok(Value::Str(s[..n].iter().collect()));
            }
            if pad.is_empty() {
                return Ok(Value::Null);
            }
            let fill: String = pad.iter().cycle().take(n - s.len()).collect();
            let s: String = s.iter().collect();
            Value::Str(if f == Lpad { fill + &s } else { s + &fill })
        }
        Repeat => Value::Str(str_arg(&vals[0]).repeat(usize::try_from(int_arg(&vals[1])).unwrap_or(0))),
        Reverse => Value::Str(str_arg(&vals[0]).chars().rev().collect()),
        InsertStr => {
            let subject: Vec<char> = str_arg(&vals[0]).chars().collect();
            let (pos, len) = (int_arg(&vals[1]), int_arg(&vals[2]));
            // A position outside the string leaves it as it is; a length past its end
            // replaces the rest.
            if pos < 1 || pos > subject.len() as i64 {
                return Ok(Value::Str(subject.into_iter().collect()));
            }
            let start = usize::try_from(pos - 1).unwrap_or(0);
            let end = if len < 0 { subject.len() } else { start.saturating_add(usize::try_from(len).unwrap_or(usize::MAX)).min(subject.len()) };
            let mut out: String = subject[..start].iter().collect();
            out.push_str(&str_arg(&vals[3]));
            out.extend(&subject[end..]);
            Value::Str(out)
        }
        Space => Value::Str(" ".repeat(usize::try_from(int_arg(&vals[0])).unwrap_or(0))),
        FindInSet => {
            let coll = Collation::default();
            let needle = str_arg(&vals[0]);
            let list = str_arg(&vals[1]);
            // A needle with a comma is never found, as in MySQL.
            let place = if needle.contains(',') { None } else { list.split(',').position(|item| coll.compare(item, &needle) == std::cmp::Ordering::Equal) };
            Value::Int(place.map_or(0, |p| p as i64 + 1))
        }
        Field => {
            // NULL is never found; numbers compare as numbers when the first is one.
            if vals[0].is_null() {
                return Ok(Value::Int(0));
            }
            let numeric = !matches!(vals[0], Value::Str(_) | Value::Bytes(_));
            let place = vals[1..].iter().position(|v| {
                !v.is_null()
                    && if numeric {
                        ops::to_f64(v) == ops::to_f64(&vals[0])
                    } else {
                        Collation::default().compare(&str_arg(v), &str_arg(&vals[0])) == std::cmp::Ordering::Equal
                    }
            });
            Value::Int(place.map_or(0, |p| p as i64 + 1))
        }
        Elt => {
            let n = if vals[0].is_null() { 0 } else { int_arg(&vals[0]) };
            match usize::try_from(n).ok().filter(|n| *n >= 1).and_then(|n| vals.get(n)) {
                Some(v) => v.clone(),
                None => Value::Null,
            }
        }
        Instr | Locate => {
            let (hay, needle, start) =
                if f == Instr { (str_arg(&vals[0]), str_arg(&vals[1]), 1) } else { (str_arg(&vals[1]), str_arg(&vals[0]), vals.get(2).map_or(1, int_arg)) };
            let coll = Collation::default();
            let hay_w: Vec<char> = hay.chars().collect();
            let needle_n = needle.chars().count();
            let mut found = 0;
            if start >= 1 {
                for i in (start as usize - 1)..=hay_w.len().saturating_sub(needle_n) {
                    if i + needle_n > hay_w.len() {
                        break;
                    }
                    let cand: String = hay_w[i..i + needle_n].iter().collect();
                    if coll.compare(&cand, &needle) == std::cmp::Ordering::Equal {
                        found = i as i64 + 1;
                        break;
                    }
                }
            }
            Value::Int(found)
        }
        Hex => match &vals[0] {
            Value::Int(_) | Value::UInt(_) => Value::Str(format!("{:X}", ops::to_i128(&vals[0]) as u64)),
            v => Value::Str(quill_sql_types::charset::hex_upper(&ops::to_bytes(v))),
        },
        Md5 => Value::Str(lower_hex(&md5::Md5::digest(ops::to_bytes(&vals[0])))),
        Sha1 => Value::Str(lower_hex(&sha1::Sha1::digest(ops::to_bytes(&vals[0])))),
        Sha2 => {
            let bytes = ops::to_bytes(&vals[0]);
            // 0 means 256; any other length has no digest (NULL, as in MySQL).
            Value::Str(lower_hex(&match int_arg(&vals[1]) {
                224 => sha2::Sha224::digest(bytes).to_vec(),
                0 | 256 => sha2::Sha256::digest(bytes).to_vec(),
                384 => sha2::Sha384::digest(bytes).to_vec(),
                512 => sha2::Sha512::digest(bytes).to_vec(),
                _ => return Ok(Value::Null),
            }))
        }
        Ord => {
            let bytes = ops::to_bytes(&vals[0]);
            let width = match &vals[0] {
                Value::Str(s) => s.chars().next().map_or(0, char::len_utf8),
                _ => usize::from(!bytes.is_empty()),
            };
            Value::Int(bytes[..width].iter().fold(0i64, |code, &b| (code << 8) | i64::from(b)))
        }
        _ => unreachable!("{f:?} is dispatched elsewhere"),
    })
}

/// Bytes as lowercase hex digits, as the digest functions give them.
fn lower_hex(bytes: &[u8]) -> String {
    quill_sql_types::charset::hex_upper(bytes).to_ascii_lowercase()
}
