//! JSON: the JSON column type's validation and normal form, JSON path expressions, and the
//! JSON functions (`JSON_OBJECT`, `JSON_EXTRACT` and `->` / `->>`, `JSON_SET` ...), as MySQL 8
//! has them.
//!
//! A JSON value travels through the executor as text in MySQL's normal form
//! ([`to_text`]): object members sorted by key length and then by key bytes, one member per
//! key (the last given wins), `", "` and `": "` between items, strings escaped as JSON needs.
//! So equal documents are equal text, and a JSON column stores what `SELECT` shows. A value
//! is parsed ([`parse`]) where a function reads it; text that is not JSON is 3140 when stored
//! into a JSON column and 3141 as a function's argument. The binder turns SQL values that a
//! function takes as JSON values (JSON_OBJECT's, JSON_ARRAY's, JSON_SET's ...) into JSON first
//! ([`JsonFunc::FromSql`]): a string becomes a JSON string, a number a number, NULL `null`, and
//! a value already JSON stays as it is.
//!
//! Path expressions: `$`, `.key`, `."quoted key"`, `.*`, `[n]`, `[last]`, `[last-n]`, `[*]`,
//! and `**` (any depth). A path with a wildcard matches several values; where one value is
//! wanted (JSON_SET and friends) such a path is error 3149.
//!
//! Not yet: JSON_TABLE, JSON_SCHEMA_VALID, JSON_SEARCH, JSON_OVERLAPS, MEMBER OF, the binary
//! JSON of MySQL's binary log (replicas get the text, as MariaDB's JSON, a LONGTEXT, has it).

use std::cmp::Ordering;

use quill_storage::Value;
use serde_json::{Map, Value as J};

use crate::error::{Result, SqlError, codes};
use crate::ops;

/// Deepest nesting a document may have, as MySQL's limit (3157 past it).
pub const JSON_DEPTH_MAX: usize = 100;

/// The JSON functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonFunc {
    /// An SQL value as JSON (see the module doc): inserted by the binder.
    FromSql,
    /// CAST(x AS JSON): text is parsed as a document.
    Cast,
    Object,
    Array,
    Extract,
    Unquote,
    Quote,
    Valid,
    Type,
    Length,
    Depth,
    Keys,
    Contains,
    ContainsPath,
    Set,
    Insert,
    Replace,
    Remove,
    ArrayAppend,
    ArrayInsert,
    MergePatch,
    MergePreserve,
    Pretty,
    /// JSON_OVERLAPS(a, b): 1 when the documents share an array element or an object member.
    Overlaps,
    /// `value MEMBER OF (array)`: 1 when the value (made JSON) is an element of the array.
    MemberOf,
    /// JSON_SEARCH(doc, 'one' | 'all', pattern [, escape [, path ...]]): the paths of the
    /// strings LIKE the pattern.
    Search,
}

impl JsonFunc {
    #[must_use]
    pub fn named(name: &str) -> Option<JsonFunc> {
        Some(match name {
            "JSON_OBJECT" => JsonFunc::Object,
            "JSON_ARRAY" => JsonFunc::Array,
            "JSON_EXTRACT" => JsonFunc::Extract,
            "JSON_UNQUOTE" => JsonFunc::Unquote,
            "JSON_QUOTE" => JsonFunc::Quote,
            "JSON_VALID" => JsonFunc::Valid,
            "JSON_TYPE" => JsonFunc::Type,
            "JSON_LENGTH" => JsonFunc::Length,
            "JSON_DEPTH" => JsonFunc::Depth,
            "JSON_KEYS" => JsonFunc::Keys,
            "JSON_CONTAINS" => JsonFunc::Contains,
            "JSON_CONTAINS_PATH" => JsonFunc::ContainsPath,
            "JSON_SET" => JsonFunc::Set,
            "JSON_INSERT" => JsonFunc::Insert,
            "JSON_REPLACE" => JsonFunc::Replace,
            "JSON_REMOVE" => JsonFunc::Remove,
            "JSON_ARRAY_APPEND" => JsonFunc::ArrayAppend,
            "JSON_ARRAY_INSERT" => JsonFunc::ArrayInsert,
            "JSON_MERGE_PATCH" => JsonFunc::MergePatch,
            "JSON_MERGE_PRESERVE" | "JSON_MERGE" => JsonFunc::MergePreserve,
            "JSON_PRETTY" => JsonFunc::Pretty,
            "JSON_OVERLAPS" => JsonFunc::Overlaps,
            "JSON_SEARCH" => JsonFunc::Search,
            _ => return None,
        })
    }

    /// The function's name in error messages.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            JsonFunc::FromSql | JsonFunc::Cast => "cast_as_json",
            JsonFunc::Object => "json_object",
            JsonFunc::Array => "json_array",
            JsonFunc::Extract => "json_extract",
            JsonFunc::Unquote => "json_unquote",
            JsonFunc::Quote => "json_quote",
            JsonFunc::Valid => "json_valid",
            JsonFunc::Type => "json_type",
            JsonFunc::Length => "json_length",
            JsonFunc::Depth => "json_depth",
            JsonFunc::Keys => "json_keys",
            JsonFunc::Contains => "json_contains",
            JsonFunc::ContainsPath => "json_contains_path",
            JsonFunc::Set => "json_set",
            JsonFunc::Insert => "json_insert",
            JsonFunc::Replace => "json_replace",
            JsonFunc::Remove => "json_remove",
            JsonFunc::ArrayAppend => "json_array_append",
            JsonFunc::ArrayInsert => "json_array_insert",
            JsonFunc::MergePatch => "json_merge_patch",
            JsonFunc::MergePreserve => "json_merge_preserve",
            JsonFunc::Pretty => "json_pretty",
            JsonFunc::Overlaps => "json_overlaps",
            JsonFunc::MemberOf => "member of",
            JsonFunc::Search => "json_search",
        }
    }

    /// Allowed argument counts.
    #[must_use]
    pub fn arity(self) -> (usize, usize) {
        match self {
            JsonFunc::Object | JsonFunc::Array => (0, usize::MAX),
            JsonFunc::FromSql
            | JsonFunc::Cast
            | JsonFunc::Unquote
            | JsonFunc::Quote
            | JsonFunc::Valid
            | JsonFunc::Type
            | JsonFunc::Depth
            | JsonFunc::Pretty => (1, 1),
            JsonFunc::Length | JsonFunc::Keys => (1, 2),
            JsonFunc::Contains => (2, 3),
            JsonFunc::Overlaps | JsonFunc::MemberOf => (2, 2),
            JsonFunc::Search => (3, usize::MAX),
            JsonFunc::Extract | JsonFunc::Remove | JsonFunc::MergePatch | JsonFunc::MergePreserve => (2, usize::MAX),
            JsonFunc::ContainsPath => (3, usize::MAX),
            JsonFunc::Set | JsonFunc::Insert | JsonFunc::Replace | JsonFunc::ArrayAppend | JsonFunc::ArrayInsert => (3, usize::MAX),
        }
    }

    /// Whether argument `i` is a value the function stores into a document (so the binder
    /// makes it JSON first), rather than a document, a path or a key.
    #[must_use]
    pub fn takes_value_at(self, i: usize) -> bool {
        match self {
            JsonFunc::Array => true,
            JsonFunc::MemberOf => i == 0,
            JsonFunc::Object => i % 2 == 1,
            JsonFunc::Set | JsonFunc::Insert | JsonFunc::Replace | JsonFunc::ArrayAppend | JsonFunc::ArrayInsert => i >= 2 && i.is_multiple_of(2),
            _ => false,
        }
    }

    /// Whether the result is a JSON value (typed JSON), rather than text or a number.
    #[must_use]
    pub fn returns_json(self) -> bool {
        !matches!(
            self,
            JsonFunc::Unquote
                | JsonFunc::Quote
                | JsonFunc::Valid
                | JsonFunc::Type
                | JsonFunc::Length
                | JsonFunc::Depth
                | JsonFunc::Contains
                | JsonFunc::ContainsPath
                | JsonFunc::Pretty
                | JsonFunc::Overlaps
                | JsonFunc::MemberOf
        )
    }

    /// Whether the result is a number (the others are text).
    #[must_use]
    pub fn returns_number(self) -> bool {
        matches!(
            self,
            JsonFunc::Valid | JsonFunc::Length | JsonFunc::Depth | JsonFunc::Contains | JsonFunc::ContainsPath | JsonFunc::Overlaps | JsonFunc::MemberOf
        )
    }
}

/// A JSON text that does not parse: what is wrong and at which byte.
#[derive(Debug, Clone)]
pub struct Invalid {
    pub message: &'static str,
    pub position: usize,
}

/// Parses JSON text.
///
/// # Errors
/// What is wrong and where.
pub fn parse(text: &str) -> std::result::Result<J, Invalid> {
    if text.trim().is_empty() {
        return Err(Invalid { message: "The document is empty.", position: 0 });
    }
    let value: J = serde_json::from_str(text).map_err(|e| {
        let position = text.split_inclusive('\n').take(e.line().saturating_sub(1)).map(str::len).sum::<usize>() + e.column().saturating_sub(1);
        let message = match e.classify() {
            serde_json::error::Category::Eof => "Missing a closing quotation mark in string.",
            _ if e.to_string().contains("trailing") => "The document root must not be followed by other values.",
            _ => "Invalid value.",
        };
        Invalid { message, position }
    })?;
    if depth(&value) > JSON_DEPTH_MAX {
        return Err(Invalid { message: "The JSON document exceeds the maximum depth.", position: 0 });
    }
    Ok(value)
}

/// 3140: text stored into JSON column `column` that is not JSON.
#[must_use]
pub fn invalid_for_column(e: &Invalid, column: &str) -> SqlError {
    SqlError::new(codes::ER_INVALID_JSON_TEXT, format!("Invalid JSON text: \"{}\" at position {} in value for column '{column}'.", e.message, e.position))
}

/// 3141: a function's argument that is not JSON.
fn invalid_argument(e: &Invalid, argument: usize, f: JsonFunc) -> SqlError {
    SqlError::new(
        codes::ER_INVALID_JSON_TEXT_IN_PARAM,
        format!("Invalid JSON text in argument {} to function {}: \"{}\" at position {}.", argument + 1, f.name(), e.message, e.position),
    )
}

/// MySQL's normal form of a value (module doc).
#[must_use]
pub fn to_text(v: &J) -> String {
    let mut out = String::new();
    write(v, &mut out);
    out
}

fn write(v: &J, out: &mut String) {
    match v {
        J::Null => out.push_str("null"),
        J::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        J::Number(n) => out.push_str(&number_text(n)),
        J::String(s) => out.push_str(&serde_json::to_string(s).expect("a string serializes")),
        J::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write(item, out);
            }
            out.push(']');
        }
        J::Object(members) => {
            out.push('{');
            for (i, (k, v)) in sorted_members(members).into_iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&serde_json::to_string(k).expect("a string serializes"));
                out.push_str(": ");
                write(v, out);
            }
            out.push('}');
        }
    }
}

/// Object members in MySQL's order: shorter keys first, then by bytes.
fn sorted_members(members: &Map<String, J>) -> Vec<(&String, &J)> {
    let mut sorted: Vec<(&String, &J)> = members.iter().collect();
    sorted.sort_by(|a, b| key_order(a.0, b.0));
    sorted
}

fn key_order(a: &str, b: &str) -> Ordering {
    a.len().cmp(&b.len()).then_with(|| a.as_bytes().cmp(b.as_bytes()))
}

/// A number as MySQL prints it in JSON: integers as they are, doubles with a fraction or an
/// exponent (`100.0`, `1.5`, `1e300`).
fn number_text(n: &serde_json::Number) -> String {
    if n.is_i64() || n.is_u64() {
        return n.to_string();
    }
    let f = n.as_f64().unwrap_or(0.0);
    if f.is_finite() && f.fract() == 0.0 && f.abs() < 1e15 { format!("{f:.1}") } else { crate::types::format_double(f) }
}

fn depth(v: &J) -> usize {
    match v {
        J::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        J::Object(members) => 1 + members.values().map(depth).max().unwrap_or(0),
        _ => 1,
    }
}

/// An SQL value as JSON ([`JsonFunc::FromSql`]); `is_json` when the value is JSON text
/// already (a JSON column, a JSON function's result), `is_bool` for a truth value.
#[must_use]
pub fn from_sql(v: &Value, is_json: bool, is_bool: bool) -> J {
    match v {
        Value::Null => J::Null,
        Value::Str(s) if is_json => parse(s).unwrap_or_else(|_| J::String(s.clone())),
        Value::Int(i) if is_bool => J::Bool(*i != 0),
        Value::Int(i) => J::from(*i),
        Value::UInt(u) => J::from(*u),
        Value::Double(f) => serde_json::Number::from_f64(*f).map_or(J::Null, J::Number),
        Value::Decimal(d) => {
            let text = d.to_string();
            text.parse::<i64>()
                .map(J::from)
                .or_else(|_| text.parse::<f64>().map(|f| serde_json::Number::from_f64(f).map_or(J::Null, J::Number)))
                .unwrap_or(J::Null)
        }
        other => J::String(ops::to_string_lossy(other)),
    }
}

// ---------------------------------------------------------------------------
// Paths.

#[derive(Debug, Clone, PartialEq)]
enum Leg {
    Member(String),
    AnyMember,
    /// `[n]` from the start, or `[last - n]` from the end.
    Index {
        from_end: bool,
        n: usize,
    },
    AnyIndex,
    AnyDepth,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Path {
    legs: Vec<Leg>,
}

impl Path {
    /// # Errors
    /// 3143 with the character position of the error.
    pub fn parse(text: &str) -> Result<Path> {
        let err = |at: usize| SqlError::new(codes::ER_INVALID_JSON_PATH, format!("Invalid JSON path expression. The error is around character position {at}."));
        let chars: Vec<char> = text.chars().collect();
        let mut i = 0;
        let skip_spaces = |i: &mut usize| {
            while *i < chars.len() && chars[*i].is_whitespace() {
                *i += 1;
            }
        };
        skip_spaces(&mut i);
        if chars.get(i) != Some(&'$') {
            return Err(err(i + 1));
        }
        i += 1;
        let mut legs = Vec::new();
        loop {
            skip_spaces(&mut i);
            match chars.get(i) {
                None => break,
                Some('.') => {
                    i += 1;
                    skip_spaces(&mut i);
                    match chars.get(i) {
                        Some('*') => {
                            i += 1;
                            legs.push(Leg::AnyMember);
                        }
                        Some('"') => {
                            let start = i;
                            i += 1;
                            let mut escaped = false;
                            while i < chars.len() && (escaped || chars[i] != '"') {
                                escaped = !escaped && chars[i] == '\\';
                                i += 1;
                            }
                            if i >= chars.len() {
                                return Err(err(i));
                            }
                            i += 1;
                            let quoted: String = chars[start..i].iter().collect();
                            let key: String = serde_json::from_str(&quoted).map_err(|_| err(i))?;
                            legs.push(Leg::Member(key));
                        }
                        Some(c) if c.is_alphabetic() || *c == '_' || *c == '$' => {
                            let start = i;
                            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '$') {
                                i += 1;
                            }
                            legs.push(Leg::Member(chars[start..i].iter().collect()));
                        }
                        _ => return Err(err(i + 1)),
                    }
                }
                Some('[') => {
                    i += 1;
                    let start = i;
                    while i < chars.len() && chars[i] != ']' {
                        i += 1;
                    }
                    if i >= chars.len() {
                        return Err(err(i));
                    }
                    let inside: String = chars[start..i].iter().collect::<String>().trim().to_owned();
                    i += 1;
                    let leg = if inside == "*" {
                        Leg::AnyIndex
                    } else if let Some(rest) = inside.strip_prefix("last") {
                        let rest = rest.trim();
                        let n = if rest.is_empty() { 0 } else { rest.strip_prefix('-').and_then(|n| n.trim().parse().ok()).ok_or_else(|| err(i))? };
                        Leg::Index { from_end: true, n }
                    } else {
                        Leg::Index { from_end: false, n: inside.parse().map_err(|_| err(i))? }
                    };
                    legs.push(leg);
                }
                Some('*') if chars.get(i + 1) == Some(&'*') => {
                    i += 2;
                    if i >= chars.len() {
                        // `**` must be followed by a leg.
                        return Err(err(i));
                    }
                    legs.push(Leg::AnyDepth);
                }
                Some(_) => return Err(err(i + 1)),
            }
        }
        Ok(Path { legs })
    }

    /// Whether the path can match more than one value.
    #[must_use]
    pub fn has_wildcard(&self) -> bool {
        self.legs.iter().any(|l| matches!(l, Leg::AnyMember | Leg::AnyIndex | Leg::AnyDepth))
    }

    /// The values the path reaches in `doc`, in document order.
    #[must_use]
    pub fn find<'d>(&self, doc: &'d J) -> Vec<&'d J> {
        let mut found = Vec::new();
        walk(doc, &self.legs, &mut found);
        found
    }
}

fn index_of(len: usize, from_end: bool, n: usize) -> Option<usize> {
    if from_end { len.checked_sub(1 + n) } else { Some(n) }
}

fn walk<'d>(v: &'d J, legs: &[Leg], out: &mut Vec<&'d J>) {
    let Some((leg, rest)) = legs.split_first() else {
        if !out.iter().any(|seen| std::ptr::eq(*seen, v)) {
            out.push(v);
        }
        return;
    };
    match (leg, v) {
        (Leg::Member(k), J::Object(m)) => {
            if let Some(child) = m.get(k) {
                walk(child, rest, out);
            }
        }
        (Leg::AnyMember, J::Object(m)) => {
            for (_, child) in sorted_members(m) {
                walk(child, rest, out);
            }
        }
        (Leg::Index { from_end, n }, J::Array(items)) => {
            if let Some(child) = index_of(items.len(), *from_end, *n).and_then(|i| items.get(i)) {
                walk(child, rest, out);
            }
        }
        // A scalar is an array of itself for [0] and [last], as in MySQL.
        (Leg::Index { n: 0, .. }, scalar) if !matches!(scalar, J::Array(_)) => walk(scalar, rest, out),
        (Leg::AnyIndex, J::Array(items)) => {
            for child in items {
                walk(child, rest, out);
            }
        }
        (Leg::AnyDepth, _) => {
            walk(v, rest, out);
            match v {
                J::Object(m) => {
                    for (_, child) in sorted_members(m) {
                        walk(child, legs, out);
                    }
                }
                J::Array(items) => {
                    for child in items {
                        walk(child, legs, out);
                    }
                }
                _ => {}
            }
        }
        _ => {}
    }
}

/// The value at a path without wildcards, to change it: its parent and where in it.
fn locate_mut<'d>(doc: &'d mut J, legs: &[Leg]) -> Option<&'d mut J> {
    let Some((leg, rest)) = legs.split_first() else { return Some(doc) };
    let child = match (leg, doc) {
        (Leg::Member(k), J::Object(m)) => m.get_mut(k)?,
        (Leg::Index { from_end, n }, J::Array(items)) => {
            let i = index_of(items.len(), *from_end, *n)?;
            items.get_mut(i)?
        }
        (Leg::Index { n: 0, .. }, scalar) if !matches!(scalar, J::Array(_)) => scalar,
        _ => return None,
    };
    locate_mut(child, rest)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Change {
    Set,
    Insert,
    Replace,
}

/// JSON_SET / JSON_INSERT / JSON_REPLACE of `value` at `path` in `doc`.
fn change(doc: &mut J, path: &Path, value: J, how: Change) {
    let Some((last, parent_legs)) = path.legs.split_last() else {
        if how != Change::Insert {
            *doc = value;
        }
        return;
    };
    if let Some(existing) = locate_mut(doc, &path.legs) {
        if how != Change::Insert {
            *existing = value;
        }
        return;
    }
    if how == Change::Replace {
        return;
    }
    let Some(parent) = locate_mut(doc, parent_legs) else { return };
    match (last, parent) {
        (Leg::Member(k), J::Object(m)) => {
            m.insert(k.clone(), value);
        }
        (Leg::Index { .. }, J::Array(items)) => items.push(value),
        // A scalar (or object) with an index past its end becomes an array of it and the value.
        (Leg::Index { .. }, other) => {
            let first = std::mem::take(other);
            *other = J::Array(vec![first, value]);
        }
        _ => {}
    }
}

fn remove(doc: &mut J, path: &Path) {
    let Some((last, parent_legs)) = path.legs.split_last() else { return };
    let Some(parent) = locate_mut(doc, parent_legs) else { return };
    match (last, parent) {
        (Leg::Member(k), J::Object(m)) => {
            m.remove(k);
        }
        (Leg::Index { from_end, n }, J::Array(items)) => {
            if let Some(i) = index_of(items.len(), *from_end, *n).filter(|i| *i < items.len()) {
                items.remove(i);
            }
        }
        _ => {}
    }
}

fn contains(target: &J, candidate: &J) -> bool {
    match (target, candidate) {
        (J::Object(t), J::Object(c)) => c.iter().all(|(k, cv)| t.get(k).is_some_and(|tv| contains(tv, cv))),
        (J::Array(t), J::Array(c)) => c.iter().all(|cv| t.iter().any(|tv| contains(tv, cv))),
        (J::Array(t), scalar) => t.iter().any(|tv| contains(tv, scalar)),
        (J::Number(a), J::Number(b)) => a.as_f64() == b.as_f64(),
        (a, b) => a == b,
    }
}

/// Equal JSON values, numbers compared by value (`1` is `1.0`).
fn same(a: &J, b: &J) -> bool {
    match (a, b) {
        (J::Number(x), J::Number(y)) => x.as_f64() == y.as_f64(),
        (J::Array(x), J::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q)),
        (J::Object(x), J::Object(y)) => x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w))),
        (x, y) => x == y,
    }
}

/// JSON_OVERLAPS: arrays sharing an element, objects sharing a member (key and value), an
/// array holding the other (non-array) value, or two equal values.
fn overlaps(a: &J, b: &J) -> bool {
    match (a, b) {
        (J::Array(x), J::Array(y)) => x.iter().any(|p| y.iter().any(|q| same(p, q))),
        (J::Object(x), J::Object(y)) => x.iter().any(|(k, v)| y.get(k).is_some_and(|w| same(v, w))),
        (J::Array(x), other) | (other, J::Array(x)) => x.iter().any(|p| same(p, other)),
        (x, y) => same(x, y),
    }
}

/// JSON_SEARCH's walk: the path of each string under `v` (at `path`) LIKE `pattern`, in
/// document order (object members in MySQL's key order); only the first unless `all`.
fn search(v: &J, path: String, pattern: &str, escape: char, all: bool, found: &mut Vec<String>) {
    if !all && !found.is_empty() {
        return;
    }
    match v {
        J::String(s) if crate::like::like(s, pattern, escape, quill_storage::Collation::default()) => found.push(path),
        J::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                search(item, format!("{path}[{i}]"), pattern, escape, all, found);
            }
        }
        J::Object(members) => {
            for (key, item) in sorted_members(members) {
                search(item, format!("{path}.{}", path_key(key)), pattern, escape, all, found);
            }
        }
        _ => {}
    }
}

/// A member name as a path writes it: bare when it is an identifier, quoted otherwise.
fn path_key(key: &str) -> String {
    let mut chars = key.chars();
    let identifier = chars.next().is_some_and(|c| c.is_alphabetic() || c == '_' || c == '$') && chars.all(|c| c.is_alphanumeric() || c == '_' || c == '$');
    if identifier { key.to_owned() } else { serde_json::to_string(key).expect("a string serializes") }
}

fn merge_patch(target: J, patch: J) -> J {
    match (target, patch) {
        (J::Object(mut t), J::Object(p)) => {
            for (k, v) in p {
                if v.is_null() {
                    t.remove(&k);
                } else {
                    let merged = merge_patch(t.remove(&k).unwrap_or(J::Null), v);
                    t.insert(k, merged);
                }
            }
            J::Object(t)
        }
        (_, patch @ J::Object(_)) => merge_patch(J::Object(Map::new()), patch),
        (_, patch) => patch,
    }
}

fn merge_preserve(a: J, b: J) -> J {
    match (a, b) {
        (J::Object(mut x), J::Object(y)) => {
            for (k, v) in y {
                let merged = match x.remove(&k) {
                    Some(old) => merge_preserve(old, v),
                    None => v,
                };
                x.insert(k, merged);
            }
            J::Object(x)
        }
        (J::Array(mut x), J::Array(y)) => {
            x.extend(y);
            J::Array(x)
        }
        (J::Array(mut x), other) => {
            x.push(other);
            J::Array(x)
        }
        (other, J::Array(mut y)) => {
            y.insert(0, other);
            J::Array(y)
        }
        (x, y) => J::Array(vec![x, y]),
    }
}

fn type_name(v: &J) -> &'static str {
    match v {
        J::Null => "NULL",
        J::Bool(_) => "BOOLEAN",
        J::Number(n) if n.is_i64() => "INTEGER",
        J::Number(n) if n.is_u64() => "UNSIGNED INTEGER",
        J::Number(_) => "DOUBLE",
        J::String(_) => "STRING",
        J::Array(_) => "ARRAY",
        J::Object(_) => "OBJECT",
    }
}

fn pretty(v: &J, indent: usize, out: &mut String) {
    let pad = |n: usize| "  ".repeat(n);
    match v {
        J::Array(items) if !items.is_empty() => {
            out.push_str("[\n");
            for (i, item) in items.iter().enumerate() {
                out.push_str(&pad(indent + 1));
                pretty(item, indent + 1, out);
                out.push_str(if i + 1 < items.len() { ",\n" } else { "\n" });
            }
            out.push_str(&pad(indent));
            out.push(']');
        }
        J::Object(members) if !members.is_empty() => {
            out.push_str("{\n");
            let sorted = sorted_members(members);
            for (i, (k, item)) in sorted.iter().enumerate() {
                out.push_str(&pad(indent + 1));
                out.push_str(&serde_json::to_string(k).expect("a string serializes"));
                out.push_str(": ");
                pretty(item, indent + 1, out);
                out.push_str(if i + 1 < sorted.len() { ",\n" } else { "\n" });
            }
            out.push_str(&pad(indent));
            out.push('}');
        }
        other => write(other, out),
    }
}

/// Evaluates a JSON function on its arguments' values (value arguments already JSON, by the
/// binder); `flags[i]` says argument `i` is JSON typed or a truth value (for FromSql).
///
/// # Errors
/// 3141 for an argument that is not JSON, 3143 for a bad path, 3149 for a wildcard where one
/// value is needed, 3158 for a NULL member name, 1582 for a wrong argument count.
pub fn call(f: JsonFunc, vals: &[Value], flags: &[(bool, bool)]) -> Result<Value> {
    let text = |i: usize| ops::to_string_lossy(&vals[i]);
    let doc = |i: usize| -> Result<J> { parse(&text(i)).map_err(|e| invalid_argument(&e, i, f)) };
    let path = |i: usize| -> Result<Path> { Path::parse(&text(i)) };
    let single_path = |i: usize| -> Result<Path> {
        let p = path(i)?;
        if p.has_wildcard() {
            return Err(SqlError::new(
                codes::ER_INVALID_JSON_PATH_WILDCARD,
                "In this situation, path expressions may not contain the * and ** tokens or an array range.",
            ));
        }
        Ok(p)
    };
    let json = |v: J| Value::Str(to_text(&v));
    let odd_pairs = || !(vals.len() - 1).is_multiple_of(2);
    // NULL document or path: NULL (values were made JSON by the binder, so NULL is `null`).
    let nulls_propagate = !matches!(f, JsonFunc::FromSql | JsonFunc::Object | JsonFunc::Array | JsonFunc::Valid | JsonFunc::Search);
    if nulls_propagate && vals.iter().enumerate().any(|(i, v)| v.is_null() && !f.takes_value_at(i)) {
        return Ok(Value::Null);
    }
    Ok(match f {
        JsonFunc::FromSql => {
            let (is_json, is_bool) = flags.first().copied().unwrap_or_default();
            json(from_sql(&vals[0], is_json, is_bool))
        }
        JsonFunc::Cast => match &vals[0] {
            Value::Str(_) | Value::Bytes(_) => json(doc(0)?),
            other => json(from_sql(other, false, false)),
        },
        JsonFunc::Object => {
            if !vals.len().is_multiple_of(2) {
                return Err(wrong_count(f));
            }
            let mut m = Map::new();
            for pair in vals.chunks(2) {
                if pair[0].is_null() {
                    return Err(SqlError::new(codes::ER_JSON_DOCUMENT_NULL_KEY, "JSON documents may not contain NULL member names."));
                }
                m.insert(ops::to_string_lossy(&pair[0]), parse(&ops::to_string_lossy(&pair[1])).unwrap_or(J::Null));
            }
            json(J::Object(m))
        }
        JsonFunc::Array => json(J::Array(vals.iter().map(|v| parse(&ops::to_string_lossy(v)).unwrap_or(J::Null)).collect())),
        JsonFunc::Extract => {
            let d = doc(0)?;
            let paths = (1..vals.len()).map(path).collect::<Result<Vec<_>>>()?;
            let mut found: Vec<J> = Vec::new();
            for p in &paths {
                found.extend(p.find(&d).into_iter().cloned());
            }
            let wrapped = paths.len() > 1 || paths.iter().any(Path::has_wildcard);
            match (found.len(), wrapped) {
                (0, _) => Value::Null,
                (_, true) => json(J::Array(found)),
                (_, false) => json(found.swap_remove(0)),
            }
        }
        JsonFunc::Unquote => {
            let t = text(0);
            match parse(&t) {
                Ok(J::String(s)) if t.trim_start().starts_with('"') => Value::Str(s),
                _ => Value::Str(t),
            }
        }
        JsonFunc::Quote => Value::Str(serde_json::to_string(&text(0)).expect("a string serializes")),
        JsonFunc::Valid => match &vals[0] {
            Value::Null => Value::Null,
            _ => Value::Int(i64::from(parse(&text(0)).is_ok())),
        },
        JsonFunc::Type => Value::Str(type_name(&doc(0)?).to_owned()),
        JsonFunc::Length | JsonFunc::Keys | JsonFunc::Depth => {
            let d = doc(0)?;
            let target = match vals.get(1) {
                Some(_) => match single_path(1)?.find(&d).into_iter().next() {
                    Some(t) => t.clone(),
                    None => return Ok(Value::Null),
                },
                None => d,
            };
            match f {
                JsonFunc::Length => Value::Int(match &target {
                    J::Array(items) => items.len(),
                    J::Object(m) => m.len(),
                    _ => 1,
                } as i64),
                JsonFunc::Depth => Value::Int(depth(&target) as i64),
                _ => match &target {
                    J::Object(m) => json(J::Array(sorted_members(m).into_iter().map(|(k, _)| J::String(k.clone())).collect())),
                    _ => Value::Null,
                },
            }
        }
        JsonFunc::Contains => {
            let (target, candidate) = (doc(0)?, doc(1)?);
            let target = match vals.get(2) {
                Some(_) => match single_path(2)?.find(&target).into_iter().next() {
                    Some(t) => t.clone(),
                    None => return Ok(Value::Null),
                },
                None => target,
            };
            Value::Int(i64::from(contains(&target, &candidate)))
        }
        JsonFunc::Overlaps => Value::Int(i64::from(overlaps(&doc(0)?, &doc(1)?))),
        JsonFunc::MemberOf => {
            let value = parse(&text(0)).unwrap_or(J::Null);
            let member = match doc(1)? {
                J::Array(items) => items.iter().any(|item| same(item, &value)),
                other => same(&other, &value),
            };
            Value::Int(i64::from(member))
        }
        JsonFunc::Search => {
            // NULL document, pattern or path: NULL; a NULL escape is the default one.
            if vals[0].is_null() || vals[2].is_null() || vals.iter().skip(4).any(Value::is_null) {
                return Ok(Value::Null);
            }
            let d = doc(0)?;
            let all = match text(1).to_ascii_lowercase().as_str() {
                "all" => true,
                "one" => false,
                _ => return Err(SqlError::new(codes::ER_JSON_VALUE_TOO_BIG, "The oneOrAll argument to json_search may take these values: 'one' or 'all'.")),
            };
            let escape = match vals.get(3).filter(|v| !v.is_null()).map(|_| text(3)) {
                None => '\\',
                Some(e) if e.is_empty() => '\\',
                Some(e) if e.chars().count() == 1 => e.chars().next().unwrap_or('\\'),
                Some(_) => return Err(SqlError::new(codes::ER_WRONG_ARGUMENTS, "Incorrect arguments to ESCAPE")),
            };
            let pattern = text(2);
            let mut found = Vec::new();
            let starts: Vec<(String, &J)> = if vals.len() > 4 {
                let mut starts = Vec::new();
                for i in 4..vals.len() {
                    let p = single_path(i)?;
                    starts.extend(p.find(&d).into_iter().map(|node| (text(i).trim().to_owned(), node)));
                }
                starts
            } else {
                vec![("$".to_owned(), &d)]
            };
            for (prefix, node) in starts {
                search(node, prefix, &pattern, escape, all, &mut found);
            }
            found.dedup();
            match (found.len(), all) {
                (0, _) => Value::Null,
                (1, _) | (_, false) => json(J::String(found.swap_remove(0))),
                _ => json(J::Array(found.into_iter().map(J::String).collect())),
            }
        }
        JsonFunc::ContainsPath => {
            let d = doc(0)?;
            let all = match text(1).to_ascii_lowercase().as_str() {
                "all" => true,
                "one" => false,
                _ => {
                    return Err(SqlError::new(
                        codes::ER_JSON_VALUE_TOO_BIG,
                        "The oneOrAll argument to json_contains_path may take these values: 'one' or 'all'.",
                    ));
                }
            };
            let paths = (2..vals.len()).map(path).collect::<Result<Vec<_>>>()?;
            let present = |p: &Path| !p.find(&d).is_empty();
            Value::Int(i64::from(if all { paths.iter().all(present) } else { paths.iter().any(present) }))
        }
        JsonFunc::Set | JsonFunc::Insert | JsonFunc::Replace | JsonFunc::ArrayAppend | JsonFunc::ArrayInsert => {
            if odd_pairs() {
                return Err(wrong_count(f));
            }
            let mut d = doc(0)?;
            for pair in (1..vals.len()).step_by(2) {
                let p = single_path(pair)?;
                let value = parse(&text(pair + 1)).unwrap_or(J::Null);
                match f {
                    JsonFunc::Set => change(&mut d, &p, value, Change::Set),
                    JsonFunc::Insert => change(&mut d, &p, value, Change::Insert),
                    JsonFunc::Replace => change(&mut d, &p, value, Change::Replace),
                    JsonFunc::ArrayAppend => {
                        if let Some(target) = locate_mut(&mut d, &p.legs) {
                            match target {
                                J::Array(items) => items.push(value),
                                other => {
                                    let first = std::mem::take(other);
                                    *other = J::Array(vec![first, value]);
                                }
                            }
                        }
                    }
                    _ => {
                        let Some((Leg::Index { from_end, n }, parent)) = p.legs.split_last() else {
                            return Err(SqlError::new(codes::ER_INVALID_JSON_PATH_ARRAY_CELL, "A path expression is not a path to a cell in an array."));
                        };
                        if let Some(J::Array(items)) = locate_mut(&mut d, parent) {
                            let at = index_of(items.len() + 1, *from_end, *n).unwrap_or(0).min(items.len());
                            items.insert(at, value);
                        }
                    }
                }
            }
            json(d)
        }
        JsonFunc::Remove => {
            let mut d = doc(0)?;
            for i in 1..vals.len() {
                let p = single_path(i)?;
                if p.legs.is_empty() {
                    return Err(SqlError::new(codes::ER_JSON_VACUOUS_PATH, "The path expression '$' is not allowed in this context."));
                }
                remove(&mut d, &p);
            }
            json(d)
        }
        JsonFunc::MergePatch | JsonFunc::MergePreserve => {
            let mut merged = doc(0)?;
            for i in 1..vals.len() {
                let next = doc(i)?;
                merged = if f == JsonFunc::MergePatch { merge_patch(merged, next) } else { merge_preserve(merged, next) };
            }
            json(merged)
        }
        JsonFunc::Pretty => {
            let mut out = String::new();
            pretty(&doc(0)?, 0, &mut out);
            Value::Str(out)
        }
    })
}

fn wrong_count(f: JsonFunc) -> SqlError {
    SqlError::new(
        codes::ER_WRONG_PARAMCOUNT_TO_NATIVE_FCT,
        format!("Incorrect parameter count in the call to native function '{}'", f.name().to_ascii_uppercase()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn normal(text: &str) -> String {
        to_text(&parse(text).unwrap())
    }

    #[test]
    fn documents_take_mysqls_normal_form() {
        assert_eq!(normal(r#"{"bb":1,"a" : [1,2.50, "x"],"c":{"z":null,"y":true}}"#), r#"{"a": [1, 2.5, "x"], "c": {"y": true, "z": null}, "bb": 1}"#);
        assert_eq!(normal(r#"{"k": 1, "k": 2}"#), r#"{"k": 2}"#, "the last duplicate key wins");
        assert_eq!(normal("1e2"), "100.0");
        assert!(parse("not json").is_err());
        assert_eq!(parse("[1,").unwrap_err().message, "Missing a closing quotation mark in string.");
    }

    #[test]
    fn paths_find_members_cells_and_wildcards() {
        let d = parse(r#"{"a": {"b": [10, 20, 30]}, "c": [{"b": 1}], "d e": 5}"#).unwrap();
        let find = |p: &str| Path::parse(p).unwrap().find(&d).into_iter().map(to_text).collect::<Vec<_>>();
        assert_eq!(find("$.a.b[1]"), ["20"]);
        assert_eq!(find("$.a.b[last]"), ["30"]);
        assert_eq!(find("$.a.b[last-2]"), ["10"]);
        assert_eq!(find(r#"$."d e""#), ["5"]);
        assert_eq!(find("$.a.b[*]"), ["10", "20", "30"]);
        assert_eq!(find("$**.b"), [r#"[10, 20, 30]"#, "1"]);
        assert!(Path::parse("a.b").is_err());
        assert!(Path::parse("$.").is_err());
    }
}
