//! SQL `LIKE` matching: `%` and `_` wildcards with an escape character, under a collation.
//!
//! Both the pattern and the text are folded by the collation's weights before matching, one
//! character at a time, so an escaped or wildcard character keeps its meaning after folding.
//! Used by expression evaluation, `JSON_SEARCH` and the `SHOW ... LIKE` filters.

use quill_storage::Collation;

/// SQL LIKE with `%`, `_` and an escape character, under a collation.
#[must_use]
pub fn like(s: &str, pattern: &str, escape: char, collation: Collation) -> bool {
    let fold = |x: &str| -> Vec<char> {
        match collation {
            Collation::Utf8mb4Bin | Collation::Binary => x.chars().collect(),
            c => c.weight(x).chars().collect(),
        }
    };
    // Fold the pattern char by char so escapes and wildcards survive folding.
    let mut pat: Vec<(char, bool)> = Vec::new();
    let mut it = pattern.chars();
    while let Some(c) = it.next() {
        if c == escape
            && let Some(n) = it.next()
        {
            for f in fold(&n.to_string()) {
                pat.push((f, true));
            }
            continue;
        }
        if c == '%' || c == '_' {
            pat.push((c, false));
        } else {
            for f in fold(&c.to_string()) {
                pat.push((f, true));
            }
        }
    }
    let text = fold(s);
    like_match(&text, &pat)
}

fn like_match(text: &[char], pat: &[(char, bool)]) -> bool {
    let (mut t, mut p) = (0, 0);
    let (mut star_p, mut star_t) = (usize::MAX, 0);
    while t < text.len() {
        if p < pat.len() && (pat[p] == ('_', false) || (pat[p].1 && pat[p].0 == text[t])) {
            t += 1;
            p += 1;
        } else if p < pat.len() && pat[p] == ('%', false) {
            star_p = p;
            star_t = t;
            p += 1;
        } else if star_p != usize::MAX {
            p = star_p + 1;
            star_t += 1;
            t = star_t;
        } else {
            return false;
        }
    }
    while p < pat.len() && pat[p] == ('%', false) {
        p += 1;
    }
    p == pat.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_handles_wildcards_escape_and_case() {
        let c = Collation::Utf8mb4AiCi;
        assert!(like("Hello", "h%o", '\\', c));
        assert!(like("Hello", "_ELLO", '\\', c));
        assert!(!like("Hello", "h%x", '\\', c));
        assert!(like("50%", "50\\%", '\\', c));
        assert!(!like("50x", "50\\%", '\\', c));
        assert!(!like("Hello", "h%", '\\', Collation::Utf8mb4Bin));
    }
}
