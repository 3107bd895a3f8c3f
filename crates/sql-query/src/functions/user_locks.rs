//! The user-level lock functions (GET_LOCK, RELEASE_LOCK, RELEASE_ALL_LOCKS, IS_FREE_LOCK,
//! IS_USED_LOCK), SLEEP and WAIT_FOR_TABLE_COMMIT: those that act or wait answer, when the
//! statement runs again after a wait, what they answered the first time (`statement_waits`).

use quill_sql_types::error::{Result, SqlError, Wait, codes};
use quill_sql_types::ops;
use quill_storage::Value;

use crate::query::Env;

use super::{Func, str_arg};

/// The user-level lock functions (`txn::user_locks`), SLEEP and WAIT_FOR_TABLE_COMMIT
/// (`commit_notify`). Those that act or wait answer, when the statement runs again after a
/// wait, what they answered the first time (`statement_waits`).
pub(super) fn user_lock(f: Func, vals: &[Value], env: &Env<'_>) -> Result<Value> {
    use quill_sql_context::statement_waits::Pending;
    use quill_txn::user_locks::Get;
    let info = env.info;
    let locks = &info.engine.user_locks;
    let session = info.connection_id;
    let name = || {
        let text = vals.first().filter(|v| !v.is_null()).map(str_arg);
        lock_name(text.as_deref())
    };
    let bool_int = |b: bool| Value::Int(i64::from(b));
    match f {
        Func::IsFreeLock => return Ok(bool_int(locks.owner(&name()?).is_none())),
        Func::IsUsedLock => return Ok(locks.owner(&name()?).map_or(Value::Null, |id| Value::UInt(u64::from(id)))),
        _ => {}
    }
    let mut calls = info.function_calls.borrow_mut();
    let call = format!("{f:?}{vals:?}");
    match calls.replay(&call) {
        Ok(Some(v)) => return Ok(v),
        Ok(None) => {}
        Err(e) => {
            for name in calls.taken.drain(..) {
                locks.release(session, &name);
            }
            return Err(e);
        }
    }
    let v = match f {
        Func::GetLock => {
            let name = name()?;
            match locks.try_get(session, &name) {
                Get::Granted => {
                    calls.taken.push(name);
                    Value::Int(1)
                }
                Get::Busy => {
                    // NULL waits no time, a negative timeout (or one past any clock) for ever.
                    let seconds = if vals[1].is_null() { 0.0 } else { ops::to_f64(&vals[1]) };
                    if seconds.is_nan() || seconds == 0.0 {
                        Value::Int(0)
                    } else {
                        let deadline = (seconds > 0.0)
                            .then(|| std::time::Duration::try_from_secs_f64(seconds).ok().and_then(|d| std::time::Instant::now().checked_add(d)))
                            .flatten();
                        let wait = locks.enqueue(session, &name, deadline).map_err(|_| {
                            SqlError::new(
                                codes::ER_USER_LOCK_DEADLOCK,
                                "Deadlock found when trying to get user-level lock; try rolling back transaction/releasing locks and restarting lock acquisition.",
                            )
                        })?;
                        calls.wait(call, Pending::Lock(wait));
                        return Err(SqlError::must_wait(Wait::Function));
                    }
                }
            }
        }
        Func::ReleaseLock => {
            let name = name()?;
            match locks.release(session, &name) {
                Some(released) => {
                    if let Some(i) = calls.taken.iter().position(|t| t.key == name.key).filter(|_| released) {
                        calls.taken.remove(i);
                    }
                    bool_int(released)
                }
                None => Value::Null,
            }
        }
        Func::WaitForTableCommit => {
            let text = if vals[0].is_null() { String::new() } else { str_arg(&vals[0]) };
            let name = sqlparser::ast::ObjectName::from(text.split('.').map(|p| sqlparser::ast::Ident::new(p.trim().trim_matches('`'))).collect::<Vec<_>>());
            let (db, table) = crate::query::resolve_table_name(info, &name)?;
            let id = env.catalog.table(&db, &table)?.id;
            let after = if vals[1].is_null() { 0 } else { u64::try_from(ops::to_i128(&vals[1]).max(0)).unwrap_or(u64::MAX) };
            let seconds = match vals.get(2) {
                None => -1.0,
                Some(v) if v.is_null() => 0.0,
                Some(v) => ops::to_f64(v),
            };
            let (at, positions) = info.engine.commit_notify.subscribe(id);
            let durable = info.engine.log.get().is_none_or(|log| log.durable_lsn() >= at);
            if at > after && durable {
                Value::UInt(at)
            } else if at <= after && (seconds.is_nan() || seconds == 0.0) {
                Value::Null
            } else {
                let deadline = (seconds > 0.0)
                    .then(|| std::time::Duration::try_from_secs_f64(seconds).ok().and_then(|d| std::time::Instant::now().checked_add(d)))
                    .flatten();
                calls.wait(call, Pending::Commit { after, deadline, positions });
                return Err(SqlError::must_wait(Wait::Function));
            }
        }
        Func::Sleep => {
            let seconds = if vals[0].is_null() { -1.0 } else { ops::to_f64(&vals[0]) };
            if seconds.is_nan() || seconds < 0.0 {
                return Err(SqlError::new(codes::ER_WRONG_ARGUMENTS, "Incorrect arguments to sleep"));
            }
            match std::time::Duration::try_from_secs_f64(seconds).ok().and_then(|d| std::time::Instant::now().checked_add(d)) {
                Some(until) if seconds > 0.0 => {
                    calls.wait(call, Pending::Sleep(until));
                    return Err(SqlError::must_wait(Wait::Function));
                }
                Some(_) => Value::Int(0),
                None => return Err(SqlError::new(codes::ER_WRONG_ARGUMENTS, "Incorrect arguments to sleep")),
            }
        }
        _ => {
            calls.taken.clear();
            Value::UInt(locks.release_all(session))
        }
    };
    Ok(calls.record(call, v))
}

/// The longest user-level lock name, in characters (MySQL's `NAME_CHAR_LEN`).
pub const USER_LOCK_NAME_CHARS_MAX: usize = quill_txn::user_locks::USER_LOCK_NAME_CHARS_MAX;

/// A user-level lock name checked as MySQL 8 checks it: NULL and empty names are 3057, names
/// over [`USER_LOCK_NAME_CHARS_MAX`] characters 4163.
///
/// # Errors
/// As above.
pub fn lock_name(name: Option<&str>) -> Result<quill_txn::user_locks::LockName> {
    let shown = name.unwrap_or("NULL");
    match name {
        None | Some("") => Err(SqlError::new(
            codes::ER_USER_LOCK_WRONG_NAME,
            format!("Incorrect user-level lock name '{shown}'. The name is empty, NULL, or can not be expressed in the current character-set."),
        )),
        Some(n) if n.chars().count() > USER_LOCK_NAME_CHARS_MAX => Err(SqlError::new(
            codes::ER_USER_LOCK_OVERLONG_NAME,
            format!("User-level lock name '{n}' should not exceed {USER_LOCK_NAME_CHARS_MAX} characters."),
        )),
        Some(n) => Ok(quill_txn::user_locks::LockName::new(n)),
    }
}
