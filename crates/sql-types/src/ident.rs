//! Identifiers as MySQL prints them back: in backquotes, a backquote inside doubled. Every
//! place that writes a name into SQL text or a message (SHOW CREATE, key errors, grants, the
//! statements recovery and the replica run) quotes it here.

/// `name` quoted as SHOW CREATE TABLE / VIEW print an identifier.
#[must_use]
pub fn quote_identifier(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_backquote_inside_is_doubled() {
        assert_eq!(super::quote_identifier("a`b"), "`a``b`");
        assert_eq!(super::quote_identifier("t"), "`t`");
    }
}
