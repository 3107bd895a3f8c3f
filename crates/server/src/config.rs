//! Command line and option file: `quill serve [--port N] [--bind ADDR]
//! [--datadir DIR] [--metrics-port N] [--config FILE] [--any_system_variable=value ...]`.
//!
//! Option files use MySQL's ini layout; keys under `[mysqld]`, `[server]` and
//! `[quill]` apply. Dashes and underscores in names are interchangeable, as in
//! mysqld. Command-line options override the file.
//!
//! Why not clap: like mysqld, `quill serve` takes *every* system variable as an
//! option, and the variable table in `quill_sql::vars` is the one list of them.
//! Declaring each again for clap would duplicate that table; this small parser
//! reads `--name=value` / `--name value` against it instead.

use std::path::PathBuf;

use quill_sql::vars::{self, VarSet};
use quill_storage::Value;

/// Port Quill listens on by default (MySQL's).
pub const DEFAULT_PORT: u16 = 3306;
/// Data directory used when none is given.
pub const DEFAULT_DATADIR: &str = "./quill-data";

#[derive(Debug)]
pub struct Config {
    pub port: u16,
    pub bind: String,
    /// Where `GET /metrics` is served (`metrics`); none by default.
    pub metrics_port: Option<u16>,
    pub datadir: PathBuf,
    pub globals: VarSet,
    /// Values clamped to their variable's range, for the server log.
    pub warnings: Vec<String>,
}

pub const USAGE: &str = "usage: quill serve [--port N] [--bind ADDR] [--datadir DIR] [--metrics-port N] [--config FILE] [--<system_variable>=VALUE ...]";

/// Parse `serve` arguments (without the program name and `serve`).
///
/// # Errors
/// A message for an unknown option or a bad value.
pub fn parse(args: &[String]) -> Result<Config, String> {
    let mut cfg = Config {
        port: DEFAULT_PORT,
        bind: "127.0.0.1".into(),
        metrics_port: None,
        datadir: PathBuf::from(DEFAULT_DATADIR),
        globals: VarSet::defaults(),
        warnings: Vec::new(),
    };
    let mut pairs: Vec<(String, String)> = Vec::new();
    let mut i = 0;
    let mut config_file: Option<String> = None;
    while i < args.len() {
        let a = &args[i];
        let Some(body) = a.strip_prefix("--") else { return Err(format!("unexpected argument '{a}'\n{USAGE}")) };
        let (name, value) = match body.split_once('=') {
            Some((n, v)) => (n.to_owned(), v.to_owned()),
            None => {
                i += 1;
                let v = args.get(i).ok_or_else(|| format!("option '--{body}' needs a value\n{USAGE}"))?;
                (body.to_owned(), v.clone())
            }
        };
        if name == "config" || name == "defaults-file" {
            config_file = Some(value);
        } else {
            pairs.push((name.replace('-', "_"), value));
        }
        i += 1;
    }
    let mut all: Vec<(String, String)> = Vec::new();
    if let Some(f) = config_file {
        let text = std::fs::read_to_string(&f).map_err(|e| format!("cannot read option file {f}: {e}"))?;
        all.extend(parse_option_file(&text));
    }
    all.extend(pairs);
    for (name, value) in all {
        match name.as_str() {
            "port" => cfg.port = value.parse().map_err(|_| format!("bad --port '{value}'"))?,
            "bind" | "bind_address" => cfg.bind = value,
            "metrics_port" => {
                let port: u16 = value.parse().map_err(|_| format!("bad --metrics-port '{value}'"))?;
                cfg.metrics_port = (port != 0).then_some(port);
            }
            "datadir" => cfg.datadir = PathBuf::from(value),
            other => {
                let def = vars::lookup(other).ok_or_else(|| format!("unknown variable '{other}'"))?;
                let typed = match def.kind {
                    vars::Kind::Int(_) | vars::Kind::IntChoice(_) => {
                        option_number(&value).ok_or_else(|| format!("option '--{other}' takes a number, not '{value}'"))?
                    }
                    _ => Value::Str(value.clone()),
                };
                let v = vars::normalise(def, &typed).map_err(|e| e.message)?;
                if let Some(w) = v.warning {
                    cfg.warnings.push(format!("option '{other}': {}; set to {}", w.message, v.value));
                }
                if let Some(other) = vars::alias(def.name) {
                    cfg.globals.values.insert(other, v.value.clone());
                }
                cfg.globals.values.insert(def.name, v.value);
            }
        }
    }
    cfg.globals.values.insert("port", cfg.port.to_string());
    cfg.globals.values.insert("datadir", cfg.datadir.display().to_string());
    // The slow log's file, shown whole as MySQL shows it: in the data directory by default.
    let slow_log = cfg.globals.values.get("slow_query_log_file").cloned().unwrap_or_default();
    let slow_log = if slow_log.is_empty() { quill_sql::slow_log::DEFAULT_FILE.to_owned() } else { slow_log };
    let absolute = std::path::absolute(cfg.datadir.join(slow_log)).unwrap_or_default();
    cfg.globals.values.insert("slow_query_log_file", absolute.display().to_string());
    Ok(cfg)
}

/// A number option as mysqld reads one: digits with an optional `K`, `M` or `G` suffix
/// (times 1024, 1024², 1024³), or a negative number (which the variable's range clamps).
fn option_number(value: &str) -> Option<Value> {
    let v = value.trim();
    let (digits, scale) = match v.as_bytes().last()? {
        b'k' | b'K' => (&v[..v.len() - 1], 1u64 << 10),
        b'm' | b'M' => (&v[..v.len() - 1], 1 << 20),
        b'g' | b'G' => (&v[..v.len() - 1], 1 << 30),
        _ => (v, 1),
    };
    if let Ok(n) = digits.parse::<u64>() {
        return Some(Value::UInt(n.saturating_mul(scale)));
    }
    digits.parse::<i64>().ok().filter(|n| *n < 0 && scale == 1).map(Value::Int)
}

/// Read `key=value` lines from the `[mysqld]`, `[server]` and `[quill]` sections.
#[must_use]
pub fn parse_option_file(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut active = false;
    for line in text.lines() {
        let l = line.trim();
        if l.is_empty() || l.starts_with('#') || l.starts_with(';') {
            continue;
        }
        if let Some(section) = l.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
            active = matches!(section.trim(), "mysqld" | "server" | "quill");
            continue;
        }
        if !active {
            continue;
        }
        let (k, v) = l.split_once('=').map_or((l, "ON"), |(k, v)| (k.trim(), v.trim()));
        out.push((k.replace('-', "_"), v.trim_matches(['"', '\'']).to_owned()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_line_takes_mysqld_style_variables() {
        let args: Vec<String> = ["--port", "4000", "--innodb-lock-wait-timeout=5", "--max_connections=10"].iter().map(|s| (*s).to_owned()).collect();
        let c = parse(&args).unwrap();
        assert_eq!(c.port, 4000);
        assert_eq!(c.globals.get("innodb_lock_wait_timeout"), Some("5"));
        assert_eq!(c.globals.get("max_connections"), Some("10"));
        assert!(parse(&["--no-such-thing=1".to_owned()]).is_err());
    }

    #[test]
    fn numbers_are_clamped_to_their_range_with_a_warning() {
        let c = parse(&["--max-allowed-packet=2147483648".to_owned(), "--wait_timeout=0".to_owned()]).unwrap();
        assert_eq!(c.globals.get("max_allowed_packet"), Some("1073741824"));
        assert_eq!(c.globals.get("wait_timeout"), Some("1"));
        assert_eq!(c.warnings.len(), 2, "{:?}", c.warnings);
        let c = parse(&["--max_allowed_packet=16M".to_owned(), "--max_allowed_packet=1".to_owned()]).unwrap();
        assert_eq!(c.globals.get("max_allowed_packet"), Some("1024"));
        assert!(parse(&["--max_allowed_packet=lots".to_owned()]).is_err());
        assert_eq!(parse(&["--max_allowed_packet=4K".to_owned()]).unwrap().globals.get("max_allowed_packet"), Some("4096"));
    }

    #[test]
    fn option_file_reads_server_sections_only() {
        let f = "[client]\nport=1\n[mysqld]\nport = 3307\ninnodb-lock-wait-timeout=7\n[quill]\nmax_connections=5\n";
        let pairs = parse_option_file(f);
        assert_eq!(pairs, vec![("port".into(), "3307".into()), ("innodb_lock_wait_timeout".into(), "7".into()), ("max_connections".into(), "5".into())]);
    }
}
