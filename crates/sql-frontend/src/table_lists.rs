//! Parenthesized table lists in FROM: `FROM (t1, t2)` and `t1 JOIN (t2, t3) ON ...`, which
//! MySQL reads (a comma inside the parentheses is a cross join, of lower precedence than
//! any JOIN) and sqlparser does not: it reads a parenthesized join, never a list.
//!
//! [`rewrite`] writes each such list as the same joins nested to the right: `(a, b JOIN c
//! ON x, d)` becomes `(a CROSS JOIN (b JOIN c ON x CROSS JOIN (d)))`. Nesting each comma's
//! right side keeps the comma's precedence, so `(a, b RIGHT JOIN c ON x)` stays `a` crossed
//! with the right join. The rewrite is on sqlparser's tokens (strings and comments are never
//! mistaken for lists) and edits only at the commas and closing parentheses.
//!
//! A multi-table UPDATE's list (`UPDATE t1, t2 SET ...`) is written so too, without the
//! outer parentheses.
//!
//! A parenthesis opens a table list when it follows `FROM`, `JOIN` or `STRAIGHT_JOIN`, a
//! comma of a table list, or the parenthesis of another table list, and does not open a
//! subquery. Inside it, every comma at its own depth separates tables: an ON condition's or
//! USING's commas are inside parentheses of their own.
//!
//! Where it sits: in `quill-sql-frontend`; `parse::parse` tries it only on a statement the
//! parser refused, so a statement that parses costs nothing more.

use crate::dialect::QuillDialect;
use sqlparser::tokenizer::{Token, Tokenizer};

/// The statement with its parenthesized table lists written as nested joins (module doc), or
/// `None` when it has none.
#[must_use]
pub fn rewrite(sql: &str) -> Option<String> {
    let tokens = Tokenizer::new(&QuillDialect::default(), sql).tokenize_with_location().ok()?;
    let significant: Vec<usize> = (0..tokens.len()).filter(|&i| !matches!(tokens[i].token, Token::Whitespace(_))).collect();
    let keyword = |at: usize| match significant.get(at).map(|&i| &tokens[i].token) {
        Some(Token::Word(w)) if w.quote_style.is_none() => Some(w.value.to_ascii_uppercase()),
        _ => None,
    };
    // One open parenthesis (or the statement's own level): whether it holds a table list,
    // whether its query is in its FROM clause, and the commas met at its depth.
    struct Open {
        list: bool,
        from: bool,
        commas: Vec<usize>,
    }
    let mut stack = vec![Open { list: false, from: false, commas: Vec::new() }];
    // (significant position of a comma, of the closing parenthesis) edits, in text order.
    let mut commas: Vec<usize> = Vec::new();
    let mut closes: Vec<(usize, String)> = Vec::new();
    // `UPDATE t1, t2 SET ...`: the commas of a multi-table UPDATE's list.
    let mut update_list: Option<Vec<usize>> = None;
    for at in 0..significant.len() {
        match &tokens[significant[at]].token {
            Token::LParen => {
                let after = at.checked_sub(1).map(|p| &tokens[significant[p]].token);
                let opens_list = match after {
                    Some(Token::Word(w)) if w.quote_style.is_none() => matches!(w.value.to_ascii_uppercase().as_str(), "FROM" | "JOIN" | "STRAIGHT_JOIN"),
                    Some(Token::Comma) => stack.last().is_some_and(|o| o.list || o.from),
                    Some(Token::LParen) => stack.last().is_some_and(|o| o.list),
                    _ => false,
                };
                let subquery = matches!(keyword(at + 1).as_deref(), Some("SELECT" | "WITH" | "VALUES" | "TABLE"));
                stack.push(Open { list: opens_list && !subquery, from: false, commas: Vec::new() });
            }
            Token::RParen => {
                let open = stack.pop()?;
                if open.list && !open.commas.is_empty() {
                    commas.extend(&open.commas);
                    closes.push((at, ")".repeat(open.commas.len())));
                }
                if stack.is_empty() {
                    return None;
                }
            }
            Token::Comma if stack.len() == 1 && update_list.is_some() => update_list.iter_mut().for_each(|c| c.push(at)),
            Token::Comma => {
                if let Some(open) = stack.last_mut()
                    && open.list
                {
                    open.commas.push(at);
                }
            }
            Token::Word(w) if w.quote_style.is_none() => {
                let word = w.value.to_ascii_uppercase();
                if stack.len() == 1 && at == 0 && word == "UPDATE" {
                    update_list = Some(Vec::new());
                } else if stack.len() == 1
                    && word == "SET"
                    && let Some(list) = update_list.take()
                    && !list.is_empty()
                {
                    closes.push((at, format!("{} ", ")".repeat(list.len()))));
                    commas.extend(list);
                }
                let open = stack.last_mut()?;
                match word.as_str() {
                    "FROM" | "UPDATE" => open.from = true,
                    "WHERE" | "GROUP" | "HAVING" | "ORDER" | "LIMIT" | "WINDOW" | "UNION" | "EXCEPT" | "INTERSECT" | "FOR" | "LOCK" | "INTO" | "SET" => {
                        open.from = false
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    if commas.is_empty() {
        return None;
    }
    // Edits at byte offsets: a list's comma opens a nested join, its closing parenthesis
    // closes them all.
    let mut edits: Vec<(usize, String)> = commas.iter().map(|&c| (c, " CROSS JOIN (".to_owned())).collect();
    edits.extend(closes);
    edits.sort_by_key(|(at, _)| *at);
    let mut out = String::with_capacity(sql.len() + 16 * edits.len());
    let mut copied = 0;
    for (at, text) in edits {
        let from = crate::parse::token_offset(sql, &tokens[significant[at]]);
        out.push_str(&sql[copied..from]);
        out.push_str(&text);
        if matches!(tokens[significant[at]].token, Token::Comma) {
            copied = from + 1;
        } else {
            copied = from;
        }
    }
    out.push_str(&sql[copied..]);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::rewrite;

    #[test]
    fn lists_become_joins_nested_to_the_right() {
        assert_eq!(rewrite("SELECT * FROM (a, b) WHERE a.x = b.x").as_deref(), Some("SELECT * FROM (a CROSS JOIN ( b)) WHERE a.x = b.x"));
        assert_eq!(
            rewrite("select 1 from t join (u, v left join w on f(v.a, w.b)) on t.a = u.a").as_deref(),
            Some("select 1 from t join (u CROSS JOIN ( v left join w on f(v.a, w.b))) on t.a = u.a")
        );
        assert_eq!(rewrite("SELECT * FROM ((a, b), c)").as_deref(), Some("SELECT * FROM ((a CROSS JOIN ( b)) CROSS JOIN ( c))"));
        assert_eq!(
            rewrite("UPDATE t, u JOIN v ON u.a = v.a SET t.a = 1, u.b = 2").as_deref(),
            Some("UPDATE t CROSS JOIN ( u JOIN v ON u.a = v.a ) SET t.a = 1, u.b = 2")
        );
        assert_eq!(rewrite("SELECT (SELECT 1 FROM t, (u, v)) FROM w").as_deref(), Some("SELECT (SELECT 1 FROM t, (u CROSS JOIN ( v))) FROM w"));
    }

    #[test]
    fn other_commas_are_left_alone() {
        assert_eq!(rewrite("SELECT f(a, b), (1, 2) FROM t, u WHERE (a, b) IN ((1, 2))"), None);
        assert_eq!(rewrite("SELECT * FROM (SELECT a, b FROM t) AS x, u"), None);
        assert_eq!(rewrite("SELECT * FROM t JOIN u USING (a, b)"), None);
        assert_eq!(rewrite("SELECT '(a, b)' FROM t"), None);
    }
}
