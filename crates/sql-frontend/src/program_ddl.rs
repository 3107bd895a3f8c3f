//! The statements that make and drop stored programs, which sqlparser does not read:
//!
//! ```text
//! CREATE [DEFINER = user] TRIGGER [IF NOT EXISTS] [db.]name {BEFORE | AFTER}
//!     {INSERT | UPDATE | DELETE} ON [db.]table FOR EACH ROW [{FOLLOWS | PRECEDES} other] body
//! CREATE [DEFINER = user] PROCEDURE [IF NOT EXISTS] [db.]name ([IN | OUT | INOUT] p type, ...)
//!     [characteristic ...] body
//! CREATE [DEFINER = user] FUNCTION [IF NOT EXISTS] [db.]name (p type, ...) RETURNS type
//!     [characteristic ...] body
//! DROP {TRIGGER | PROCEDURE | FUNCTION} [IF EXISTS] [db.]name
//! ```
//!
//! A characteristic is `COMMENT 'text'`, `LANGUAGE SQL`, `[NOT] DETERMINISTIC`, `CONTAINS
//! SQL`, `NO SQL`, `READS SQL DATA`, `MODIFIES SQL DATA` or `SQL SECURITY {DEFINER |
//! INVOKER}`. The body is read by [`crate::compound::parse_body`]; its text is kept as
//! written, which is what SHOW CREATE and information_schema show.

use sqlparser::ast;
use sqlparser::tokenizer::Token;

use crate::compound::{Stmt, Tokens, parse_body};
use crate::program::{Event, Param, ParamMode, Timing};
use quill_sql_types::error::{Result, SqlError};

/// A statement of this module's grammar.
#[derive(Debug, Clone)]
pub enum ProgramStatement {
    CreateTrigger(TriggerDefinition),
    CreateRoutine(RoutineDefinition),
    DropTrigger { if_exists: bool, db: Option<String>, name: String },
    DropRoutine { function: bool, if_exists: bool, db: Option<String>, name: String },
}

/// `DEFINER = user@host`: the user and host, unquoted; `None` for CURRENT_USER.
pub type Definer = Option<(String, String)>;

#[derive(Debug, Clone)]
pub struct TriggerDefinition {
    pub definer: Definer,
    pub if_not_exists: bool,
    pub db: Option<String>,
    pub name: String,
    pub timing: Timing,
    pub event: Event,
    pub table_db: Option<String>,
    pub table: String,
    /// `FOLLOWS other` (true) or `PRECEDES other` (false).
    pub order: Option<(bool, String)>,
    pub body_text: String,
    pub body: Stmt,
}

#[derive(Debug, Clone)]
pub struct RoutineDefinition {
    pub definer: Definer,
    pub if_not_exists: bool,
    pub function: bool,
    pub db: Option<String>,
    pub name: String,
    pub params: Vec<Param>,
    /// The parameter list as written, without its parentheses.
    pub params_text: String,
    /// A function's RETURNS type, and as written.
    pub returns: Option<(ast::DataType, String)>,
    pub characteristics: Characteristics,
    pub body_text: String,
    pub body: Stmt,
}

/// A routine's characteristics.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Characteristics {
    pub comment: String,
    pub deterministic: bool,
    /// `CONTAINS SQL` (the default), `NO SQL`, `READS SQL DATA` or `MODIFIES SQL DATA`.
    pub data_access: String,
    /// `SQL SECURITY INVOKER` (the default is DEFINER).
    pub security_invoker: bool,
}

impl Characteristics {
    /// The characteristics as SHOW CREATE writes them (only those set otherwise than by
    /// default, as MySQL writes them).
    #[must_use]
    pub fn text(&self) -> String {
        let mut out = Vec::new();
        if self.deterministic {
            out.push("DETERMINISTIC".to_owned());
        }
        if self.data_access != "CONTAINS SQL" && !self.data_access.is_empty() {
            out.push(self.data_access.clone());
        }
        if self.security_invoker {
            out.push("SQL SECURITY INVOKER".to_owned());
        }
        if !self.comment.is_empty() {
            out.push(format!("COMMENT '{}'", self.comment.replace('\\', "\\\\").replace('\'', "\\'")));
        }
        out.join("\n    ")
    }
}

/// Reads `sql` if it is a statement of this grammar; `None` for any other statement.
#[must_use]
pub fn recognise(sql: &str) -> Option<Result<ProgramStatement>> {
    let mut words = crate::words::Words::new(sql).map(|w| w.to_ascii_uppercase());
    let first = words.next()?;
    match first.as_str() {
        "CREATE" => {
            // The kind comes next, or after `DEFINER = user`.
            const KINDS: [&str; 3] = ["TRIGGER", "PROCEDURE", "FUNCTION"];
            let second = words.next()?;
            let kind = if KINDS.contains(&second.as_str()) {
                second
            } else if second.starts_with("DEFINER") {
                // Past the definer's words (`=`, `user@host`, quoted parts), the next word
                // must be the kind: `CREATE DEFINER = u@h VIEW function ...` is a view.
                let definer_word =
                    |w: &String| w == "=" || w.starts_with('=') || w.contains('@') || w.starts_with(['\'', '"', '`']) || w.starts_with("CURRENT_USER");
                let mut rest = words.skip_while(|w| definer_word(w) || (second == "DEFINER" && w.is_empty()));
                let next = rest.next()?;
                if !KINDS.contains(&next.as_str()) {
                    return None;
                }
                next
            } else {
                return None;
            };
            let mut t = match Tokens::new(sql) {
                Ok(t) => t,
                Err(e) => return Some(Err(e)),
            };
            t.at = 1;
            Some(create(&mut t, &kind))
        }
        "DROP" => {
            let kind = words.next()?;
            if !["TRIGGER", "PROCEDURE", "FUNCTION"].contains(&kind.as_str()) {
                return None;
            }
            Some(drop(sql, &kind))
        }
        _ => None,
    }
}

fn drop(sql: &str, kind: &str) -> Result<ProgramStatement> {
    let mut t = Tokens::new(sql)?;
    t.at = 2;
    let if_exists = t.is_word("IF") && t.word_at(1).as_deref() == Some("EXISTS");
    if if_exists {
        t.at += 2;
    }
    let (db, name) = t.object_name()?;
    t.eat(&Token::SemiColon);
    if !t.at_end() {
        return Err(t.syntax());
    }
    Ok(match kind {
        "TRIGGER" => ProgramStatement::DropTrigger { if_exists, db, name },
        _ => ProgramStatement::DropRoutine { function: kind == "FUNCTION", if_exists, db, name },
    })
}

/// `CREATE` read; reads the rest.
fn create(t: &mut Tokens<'_>, kind: &str) -> Result<ProgramStatement> {
    let definer = if t.eat_word("DEFINER") {
        if !t.eat(&Token::Eq) {
            return Err(t.syntax());
        }
        let from = t.offset(t.at);
        while !t.at_end() && !t.is_word(kind) {
            t.at += 1;
        }
        definer(&t.sql[from..t.offset(t.at)])?
    } else {
        None
    };
    t.expect_word(kind)?;
    let if_not_exists = t.is_word("IF") && t.word_at(1).as_deref() == Some("NOT") && t.word_at(2).as_deref() == Some("EXISTS");
    if if_not_exists {
        t.at += 3;
    }
    let (db, name) = t.object_name()?;
    if kind == "TRIGGER" {
        let timing = if t.eat_word("BEFORE") {
            Timing::Before
        } else if t.eat_word("AFTER") {
            Timing::After
        } else {
            return Err(t.syntax());
        };
        let event = if t.eat_word("INSERT") {
            Event::Insert
        } else if t.eat_word("UPDATE") {
            Event::Update
        } else if t.eat_word("DELETE") {
            Event::Delete
        } else {
            return Err(t.syntax());
        };
        t.expect_word("ON")?;
        let (table_db, table) = t.object_name()?;
        for w in ["FOR", "EACH", "ROW"] {
            t.expect_word(w)?;
        }
        let order = if t.eat_word("FOLLOWS") {
            Some((true, t.ident()?))
        } else if t.eat_word("PRECEDES") {
            Some((false, t.ident()?))
        } else {
            None
        };
        let body_text = t.sql[t.offset(t.at)..].trim().to_owned();
        let body = parse_body(&body_text)?;
        return Ok(ProgramStatement::CreateTrigger(TriggerDefinition {
            definer,
            if_not_exists,
            db,
            name,
            timing,
            event,
            table_db,
            table,
            order,
            body_text,
            body,
        }));
    }
    let function = kind == "FUNCTION";
    if !t.eat(&Token::LParen) {
        return Err(t.syntax());
    }
    let params_from = t.offset(t.at);
    let mut params = Vec::new();
    while !t.eat(&Token::RParen) {
        if !params.is_empty() && !t.eat(&Token::Comma) {
            return Err(t.syntax());
        }
        let mode = if function {
            ParamMode::In
        } else if t.eat_word("INOUT") {
            ParamMode::InOut
        } else if t.eat_word("OUT") {
            ParamMode::Out
        } else {
            t.eat_word("IN");
            ParamMode::In
        };
        let name = t.ident()?;
        let ty = t.data_type()?;
        params.push(Param { name, ty, mode });
    }
    let params_text = t.sql[params_from..t.offset(t.at - 1)].trim().to_owned();
    let returns = if function {
        t.expect_word("RETURNS")?;
        let from = t.offset(t.at);
        let ty = t.data_type()?;
        Some((ty, t.sql[from..t.offset(t.at)].trim().to_owned()))
    } else {
        None
    };
    let mut characteristics = Characteristics { data_access: "CONTAINS SQL".into(), ..Characteristics::default() };
    loop {
        if t.eat_word("COMMENT") {
            match t.tokens.get(t.at) {
                Some((Token::SingleQuotedString(s) | Token::DoubleQuotedString(s), _)) => {
                    characteristics.comment = s.clone();
                    t.at += 1;
                }
                _ => return Err(t.syntax()),
            }
        } else if t.eat_word("LANGUAGE") {
            t.expect_word("SQL")?;
        } else if t.is_word("NOT") && t.word_at(1).as_deref() == Some("DETERMINISTIC") {
            t.at += 2;
            characteristics.deterministic = false;
        } else if t.eat_word("DETERMINISTIC") {
            characteristics.deterministic = true;
        } else if t.is_word("CONTAINS") && t.word_at(1).as_deref() == Some("SQL") {
            t.at += 2;
            characteristics.data_access = "CONTAINS SQL".into();
        } else if t.is_word("NO") && t.word_at(1).as_deref() == Some("SQL") {
            t.at += 2;
            characteristics.data_access = "NO SQL".into();
        } else if matches!(t.word_at(0).as_deref(), Some("READS" | "MODIFIES"))
            && t.word_at(1).as_deref() == Some("SQL")
            && t.word_at(2).as_deref() == Some("DATA")
        {
            characteristics.data_access = format!("{} SQL DATA", t.word_at(0).unwrap_or_default());
            t.at += 3;
        } else if t.is_word("SQL") && t.word_at(1).as_deref() == Some("SECURITY") {
            t.at += 2;
            characteristics.security_invoker = if t.eat_word("INVOKER") {
                true
            } else {
                t.expect_word("DEFINER")?;
                false
            };
        } else {
            break;
        }
    }
    let body_text = t.sql[t.offset(t.at)..].trim().to_owned();
    if body_text.is_empty() {
        return Err(t.syntax());
    }
    let body = parse_body(&body_text)?;
    Ok(ProgramStatement::CreateRoutine(RoutineDefinition {
        definer,
        if_not_exists,
        function,
        db,
        name,
        params,
        params_text,
        returns,
        characteristics,
        body_text,
        body,
    }))
}

/// `user[@host]` or `CURRENT_USER[()]`, parts quoted or not.
fn definer(text: &str) -> Result<Definer> {
    let text = text.trim();
    if text.eq_ignore_ascii_case("CURRENT_USER") || text.eq_ignore_ascii_case("CURRENT_USER()") {
        return Ok(None);
    }
    let mut quote = None;
    let mut split = None;
    for (i, c) in text.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if matches!(c, '\'' | '"' | '`') => quote = Some(c),
            None if c == '@' => {
                split = Some(i);
                break;
            }
            None => {}
        }
    }
    let unquote = |s: &str| {
        let s = s.trim();
        let q = s.chars().next().filter(|c| matches!(c, '\'' | '"' | '`'));
        match q {
            Some(q) if s.len() >= 2 && s.ends_with(q) => s[1..s.len() - 1].replace(&format!("{q}{q}"), &q.to_string()),
            _ => s.to_owned(),
        }
    };
    let (user, host) = match split {
        Some(i) => (unquote(&text[..i]), unquote(&text[i + 1..])),
        None => (unquote(text), "%".to_owned()),
    };
    if user.is_empty() && host.is_empty() {
        return Err(SqlError::parse(text));
    }
    Ok(Some((user, host)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triggers_and_routines_read() {
        let Some(Ok(ProgramStatement::CreateTrigger(t))) =
            recognise("CREATE DEFINER=`root`@`localhost` TRIGGER app.t1 BEFORE UPDATE ON `items` FOR EACH ROW FOLLOWS t0 SET NEW.n = NEW.n + 1")
        else {
            panic!()
        };
        assert_eq!(t.definer, Some(("root".into(), "localhost".into())));
        assert_eq!((t.db.as_deref(), t.name.as_str(), t.timing, t.event, t.table.as_str()), (Some("app"), "t1", Timing::Before, Event::Update, "items"));
        assert_eq!(t.order, Some((true, "t0".into())));
        assert_eq!(t.body_text, "SET NEW.n = NEW.n + 1");
        let Some(Ok(ProgramStatement::CreateRoutine(r))) = recognise(
            "CREATE FUNCTION IF NOT EXISTS f(a INT, b DECIMAL(10,2)) RETURNS VARCHAR(20) CHARSET utf8mb4 DETERMINISTIC READS SQL DATA COMMENT 'it''s' RETURN CONCAT(a, b)",
        ) else {
            panic!()
        };
        assert!(r.function && r.if_not_exists);
        assert_eq!(r.params.len(), 2);
        assert_eq!(r.params_text, "a INT, b DECIMAL(10,2)");
        assert_eq!(r.returns.as_ref().unwrap().1, "VARCHAR(20) CHARSET utf8mb4");
        assert_eq!(r.characteristics.text(), "DETERMINISTIC\n    READS SQL DATA\n    COMMENT 'it\\'s'");
        assert_eq!(r.body_text, "RETURN CONCAT(a, b)");
        let Some(Ok(ProgramStatement::CreateRoutine(p))) =
            recognise("CREATE DEFINER = 'u'@'%' PROCEDURE p(IN a INT, OUT b INT, INOUT c TEXT) SQL SECURITY INVOKER BEGIN SET b = a; END")
        else {
            panic!()
        };
        assert_eq!(p.params.iter().map(|p| p.mode).collect::<Vec<_>>(), [ParamMode::In, ParamMode::Out, ParamMode::InOut]);
        assert_eq!(p.definer, Some(("u".into(), "%".into())));
        assert!(p.characteristics.security_invoker);
        assert!(matches!(recognise("DROP TRIGGER IF EXISTS a.b"), Some(Ok(ProgramStatement::DropTrigger { if_exists: true, .. }))));
        assert!(matches!(recognise("DROP FUNCTION f"), Some(Ok(ProgramStatement::DropRoutine { function: true, .. }))));
        assert!(recognise("CREATE TABLE t (a INT)").is_none());
        assert!(recognise("CREATE DEFINER=u@h VIEW function AS SELECT 1").is_none());
        assert!(recognise("CREATE DEFINER = 'u'@'%' SQL SECURITY INVOKER VIEW procedure AS SELECT 1").is_none());
        assert!(recognise("DROP TABLE t").is_none());
    }
}
