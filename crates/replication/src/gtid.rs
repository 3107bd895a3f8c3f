//! GTID sets as the replica keeps them and `@@gtid_executed` prints them: per source UUID
//! (as text), ascending intervals `start..=end`.
//!
//! Where it sits: shared by the replica (what it applied) and the binary log (what a
//! replica asking for a dump lacks).

use std::collections::BTreeMap;

/// A GTID set: per source UUID (as text), intervals `start..=end`, ascending.
pub type GtidSet = BTreeMap<String, Vec<(u64, u64)>>;

pub fn gtid_text(set: &GtidSet) -> String {
    set.iter()
        .map(|(uuid, intervals)| {
            let parts: Vec<String> = intervals.iter().map(|&(s, e)| if s == e { s.to_string() } else { format!("{s}-{e}") }).collect();
            format!("{uuid}:{}", parts.join(":"))
        })
        .collect::<Vec<_>>()
        .join(",\n")
}

pub fn add_gtid(set: &mut GtidSet, uuid: &str, gno: u64) {
    let intervals = set.entry(uuid.to_owned()).or_default();
    if let Some(last) = intervals.last_mut()
        && last.1 + 1 == gno
    {
        last.1 = gno;
        return;
    }
    if !intervals.iter().any(|&(s, e)| s <= gno && gno <= e) {
        intervals.push((gno, gno));
        intervals.sort_unstable();
    }
}

pub fn contains(set: &GtidSet, uuid: &str, gno: u64) -> bool {
    set.get(uuid).is_some_and(|i| i.iter().any(|&(s, e)| s <= gno && gno <= e))
}

/// Adds `start..=end` to `uuid`'s intervals, keeping them ascending and merged.
pub fn add_interval(set: &mut GtidSet, uuid: &str, start: u64, end: u64) {
    let intervals = set.entry(uuid.to_owned()).or_default();
    intervals.push((start, end));
    intervals.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::with_capacity(intervals.len());
    for &(s, e) in intervals.iter() {
        match merged.last_mut() {
            Some(last) if s <= last.1.saturating_add(1) => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    *intervals = merged;
}

/// A UUID's text, as a GTID set names its source.
#[must_use]
pub fn uuid_text(sid: [u8; 16]) -> String {
    quill_sql::server_uuid::uuid_text(&sid)
}

/// The intervals `start..=end` without every interval `cuts` names (also `start..=end`).
#[must_use]
pub fn minus(intervals: &[(u64, u64)], cuts: impl IntoIterator<Item = (u64, u64)>) -> Vec<(u64, u64)> {
    let mut pieces = intervals.to_vec();
    for cut in cuts {
        pieces = pieces.into_iter().flat_map(|piece| without(piece, cut)).collect();
    }
    pieces
}

/// `a..=b` without `s..=e`: up to two pieces.
fn without((a, b): (u64, u64), (s, e): (u64, u64)) -> Vec<(u64, u64)> {
    if b < s || a > e {
        return vec![(a, b)];
    }
    let mut pieces = Vec::new();
    if a < s {
        pieces.push((a, s - 1));
    }
    if b > e {
        pieces.push((e + 1, b));
    }
    pieces
}

/// The GTIDs of `set` that are not in `minus`.
#[must_use]
pub fn subtract(set: &GtidSet, minus: &GtidSet) -> GtidSet {
    let mut out = GtidSet::new();
    for (uuid, intervals) in set {
        let pieces = self::minus(intervals, minus.get(uuid).into_iter().flatten().copied());
        if !pieces.is_empty() {
            out.insert(uuid.clone(), pieces);
        }
    }
    out
}

/// A set as [`gtid_text`] prints it (`uuid:1-5:7,\nuuid2:1-3`); malformed parts are left
/// out.
#[must_use]
pub fn parse(text: &str) -> GtidSet {
    let mut set = GtidSet::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let mut pieces = part.split(':');
        let Some(uuid) = pieces.next() else { continue };
        let intervals: Vec<(u64, u64)> = pieces
            .filter_map(|p| match p.split_once('-') {
                Some((s, e)) => Some((s.trim().parse().ok()?, e.trim().parse().ok()?)),
                None => p.trim().parse().ok().map(|n| (n, n)),
            })
            .filter(|&(s, e)| s >= 1 && s <= e)
            .collect();
        if !intervals.is_empty() {
            set.entry(uuid.trim().to_lowercase()).or_default().extend(intervals);
        }
    }
    set
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gtid_sets_grow_by_intervals_and_print_as_mysql_does() {
        let mut set = GtidSet::new();
        for gno in [1, 2, 3, 5] {
            add_gtid(&mut set, "u", gno);
        }
        add_gtid(&mut set, "u", 2);
        assert_eq!(gtid_text(&set), "u:1-3:5");
        assert!(contains(&set, "u", 3) && !contains(&set, "u", 4) && !contains(&set, "v", 1));
    }

    #[test]
    fn intervals_added_in_any_order_merge() {
        let mut set = GtidSet::new();
        for (s, e) in [(5, 5), (1, 2), (3, 3), (7, 9), (6, 6), (20, 20)] {
            add_interval(&mut set, "u", s, e);
        }
        assert_eq!(gtid_text(&set), "u:1-3:5-9:20");
    }

    #[test]
    fn a_set_minus_another_keeps_what_the_other_lacks() {
        let set = parse("a:1-10:20-30,b:5");
        let minus = parse("a:3-4:10-25,b:5,c:1");
        assert_eq!(gtid_text(&subtract(&set, &minus)), "a:1-2:5-9:26-30");
        assert_eq!(subtract(&set, &GtidSet::new()), set);
    }

    #[test]
    fn a_printed_set_parses_back() {
        let mut set = GtidSet::new();
        for (uuid, gno) in [("a", 1), ("a", 2), ("a", 9), ("b", 4)] {
            add_gtid(&mut set, uuid, gno);
        }
        assert_eq!(parse(&gtid_text(&set)), set);
        assert_eq!(parse(""), GtidSet::new());
        assert_eq!(parse("x:0-3, y:nope"), GtidSet::new(), "malformed intervals are left out");
    }
}
