//! ALTER TABLE on a catalog copy: columns added, dropped, changed, renamed or reordered,
//! indexes and keys added and dropped, CHECK constraints, table options. The new definition is
//! checked (key columns, foreign keys against their indexes), then the table is rebuilt from
//! the old one's rows when its rows change shape (`rebuild`), or its definition replaced in
//! place when they do not.

use std::ops::Bound;

use quill_storage::{Collation, ReadView, ScanOrder, Value};
use sqlparser::ast::{self, TableConstraint};

use crate::catalog::{Catalog, Column, ColumnDefault, IndexMeta, TableMeta};
use crate::error::{Result, SqlError, Warning, codes};
use crate::foreign_keys::{self, ForeignKey};
use crate::query::{self, Env};
use crate::session_info::SessionInfo;
use crate::types::{WriteContext, coerce_to_column};

use super::{TableOptions, add_constraint, column_from_ast, option_text, row_format_warnings, table_option, unique_index_name, validate};

/// The name MySQL gives the next unnamed CHECK constraint of `table`: `<table>_chk_<n>`,
/// one past the highest such number in use.
pub(super) fn next_check_name(table: &str, checks: &[crate::catalog::CheckConstraint]) -> String {
    let prefix = format!("{table}_chk_");
    let highest = checks.iter().filter_map(|c| c.name.strip_prefix(&prefix).and_then(|n| n.parse::<u32>().ok())).max().unwrap_or(0);
    format!("{prefix}{}", highest + 1)
}

/// Rebuild a table with a changed definition, copying its committed rows (into the rows of
/// its new row format, if `options` changes it).
#[allow(clippy::too_many_arguments)]
pub(super) fn rebuild(
    catalog: &mut Catalog,
    db: &str,
    name: &str,
    columns: Vec<Column>,
    column_map: Vec<Option<usize>>,
    primary: Vec<usize>,
    indexes: Vec<IndexMeta>,
    foreign_keys: Vec<ForeignKey>,
    options: TableOptions,
    (info, warnings): (&SessionInfo, &mut Vec<Warning>),
    checks: Option<Vec<crate::catalog::CheckConstraint>>,
) -> Result<()> {
    validate(&columns, &primary, &indexes)?;
    let old = catalog.table(db, name)?;
    check_key_indexes(catalog, old, (&columns, &primary, &indexes), &foreign_keys)?;
    let mut meta = TableMeta::new(old.id, db, name, columns, primary, indexes, options.collation);
    meta.row_format = options.row_format;
    meta.comment = options.comment;
    meta.created_at = old.created_at;
    meta.foreign_keys = foreign_keys;
    meta.checks = checks.unwrap_or_else(|| old.checks.clone());
    if indexes_added_only(old, &meta, &column_map) {
        // Only indexes added: they are built from the rows where they are, not copied.
        let mut added = old.with_indexes(meta.indexes.clone()).map_err(|e| build_error(old, &meta, e))?;
        row_format_warnings(&added, warnings);
        added.comment = meta.comment;
        added.foreign_keys = meta.foreign_keys;
        return catalog.replace_table(added);
    }
    let meta = meta.with_storage(options.row_format, catalog.tablespace().as_deref())?;
    row_format_warnings(&meta, warnings);
    let scratch = Catalog::default();
    let env = crate::show::statement_env(&scratch, ReadView::current(0), &[], info.now_us(), info);
    if let Err(e) = crate::check_constraints::validate(&env, &meta) {
        return Err(SqlError::new(codes::ER_DEPENDENT_BY_CHECK_CONSTRAINT, format!("A check constraint of '{name}' no longer reads: {}", e.message)));
    }
    meta.data.set_auto_increment(old.data.auto_increment());
    // A cursor, not a copy: the old table may be far larger than memory.
    let rows = old.data.scan(Bound::Unbounded, Bound::Unbounded, ReadView::current(0), ScanOrder::Ascending);
    for (n, (_, r)) in rows.enumerate() {
        let mut new_row = Vec::with_capacity(meta.columns.len());
        for (c, src) in meta.columns.iter().zip(&column_map) {
            let v = match src {
                Some(i) => r[*i].clone(),
                None => match &c.default {
                    ColumnDefault::Value(v) => v.clone(),
                    ColumnDefault::Expression(_) => crate::dml::column_default(c, info.now_us(), info)?,
                    _ => Value::Null,
                },
            };
            let mut cx = WriteContext { column: &c.name, row: n as u64 + 1, strict: true, warnings };
            let v = coerce_to_column(v, &c.ty, &mut cx)?;
            if v.is_null() && !c.nullable {
                if src.is_none() {
                    // A new NOT NULL column without default gets the type's zero value.
                    new_row.push(crate::dml::zero_value(&c.ty));
                    continue;
                }
                return Err(SqlError::new(codes::ER_BAD_NULL_ERROR, format!("Column '{}' cannot be null", c.name)));
            }
            new_row.push(v);
        }
        crate::check_constraints::enforce(&env, &meta, &new_row)?;
        let pk = meta.data.write_row(&meta.data.write_latch(), 0, &new_row).map_err(|e| match e {
            quill_storage::WriteError::Duplicate { .. } => SqlError::new(codes::ER_DUP_ENTRY, format!("Duplicate entry for key while altering '{name}'")),
            quill_storage::WriteError::Locked { .. } => SqlError::internal("row locked during ALTER"),
        })?;
        meta.data.commit_row(0, &pk, 0, 0);
    }
    catalog.replace_table(meta)
}

/// Whether `new` is `old` with indexes added after its own and nothing else that its rows
/// store or must be checked against: the same columns, in place (`column_map`), primary
/// key, row format, collation and CHECK constraints. Such a table keeps its rows.
fn indexes_added_only(old: &TableMeta, new: &TableMeta, column_map: &[Option<usize>]) -> bool {
    column_map.len() == old.columns.len()
        && column_map.iter().enumerate().all(|(i, m)| *m == Some(i))
        && new.columns == old.columns
        && new.primary == old.primary
        && new.row_format == old.row_format
        && new.collation == old.collation
        && new.checks == old.checks
        && new.indexes.len() > old.indexes.len()
        && new.indexes.starts_with(&old.indexes)
}

/// The error of an index build that met a duplicate key, as MySQL words it: the values of
/// the key in the row that has it.
fn build_error(old: &TableMeta, new: &TableMeta, e: quill_storage::WriteError) -> SqlError {
    match e {
        quill_storage::WriteError::Duplicate { index, existing_pk } => crate::dml::duplicate_entry(new, index, old.data.newest(&existing_pk).as_deref()),
        other => SqlError::internal(format!("building an index of '{}': {other}", new.name)),
    }
}

/// ALTER TABLE with ADD/DROP/MODIFY/CHANGE/RENAME COLUMN, ADD/DROP INDEX, RENAME [TO] and
/// table options (`alter_options`). Renames alone keep the rows where they are, and so do
/// indexes added alone (built from the rows in place, `rebuild`); anything else copies them
/// into the new shape.
///
/// # Errors
/// Definition errors; 1091 for a missing column or index.
pub fn alter_table(
    catalog: &mut Catalog,
    info: &SessionInfo,
    now_us: i64,
    name: &ast::ObjectName,
    ops: &[ast::AlterTableOperation],
    warnings: &mut Vec<Warning>,
) -> Result<()> {
    let (db, tname) = query::resolve_table_name(info, name)?;
    let t = catalog.table(&db, &tname)?;
    let mut columns = t.columns.clone();
    let mut map: Vec<Option<usize>> = (0..columns.len()).map(Some).collect();
    let mut primary = t.primary.clone();
    let mut indexes = t.indexes.clone();
    let collation = t.collation;
    let mut options = TableOptions::of(t);
    let mut keys = t.foreign_keys.clone();
    let mut checks = t.checks.clone();
    let mut added_keys = Vec::new();
    let mut renamed_columns: Vec<(String, String)> = Vec::new();
    let mut rename_to: Option<(String, String)> = None;
    let env = crate::show::statement_env(catalog, ReadView::current(0), &[], now_us, info);
    for op in ops {
        match op {
            ast::AlterTableOperation::RenameColumn { old_column_name, new_column_name } => {
                let pos = columns
                    .iter()
                    .position(|c| c.name.eq_ignore_ascii_case(&old_column_name.value))
                    .ok_or_else(|| SqlError::bad_field(&old_column_name.value, &tname))?;
                if columns.iter().enumerate().any(|(i, c)| i != pos && c.name.eq_ignore_ascii_case(&new_column_name.value)) {
                    return Err(SqlError::new(codes::ER_DUP_FIELDNAME, format!("Duplicate column name '{}'", new_column_name.value)));
                }
                renamed_columns.push((columns[pos].name.clone(), new_column_name.value.clone()));
                columns[pos].name.clone_from(&new_column_name.value);
            }
            // `ALTER [COLUMN] c SET DEFAULT v | DROP DEFAULT`: the column's default only.
            ast::AlterTableOperation::AlterColumn { column_name, op } => {
                let pos = columns
                    .iter()
                    .position(|c| c.name.eq_ignore_ascii_case(&column_name.value))
                    .ok_or_else(|| SqlError::bad_field(&column_name.value, &tname))?;
                columns[pos].default = match op {
                    ast::AlterColumnOperation::SetDefault { value } => super::default_from_ast(&env, value, &columns[pos])?,
                    ast::AlterColumnOperation::DropDefault => ColumnDefault::None,
                    other => return Err(SqlError::unsupported(format!("ALTER COLUMN ... {other}"))),
                };
            }
            ast::AlterTableOperation::RenameTable { table_name: ast::RenameTableNameKind::To(to) | ast::RenameTableNameKind::As(to) } => {
                rename_to = Some(query::resolve_table_name(info, to)?);
            }
            ast::AlterTableOperation::AddColumn { column_def, column_position, .. } => {
                let (col, pk, uq) = column_from_ast(&env, column_def, collation)?;
                let pos = match column_position {
                    Some(ast::MySQLColumnPosition::First) => 0,
                    Some(ast::MySQLColumnPosition::After(after)) => columns
                        .iter()
                        .position(|c| c.name.eq_ignore_ascii_case(&after.value))
                        .map(|p| p + 1)
                        .ok_or_else(|| SqlError::bad_field(&after.value, &tname))?,
                    None => columns.len(),
                };
                shift_positions(&mut primary, &mut indexes, pos, 1);
                columns.insert(pos, col);
                map.insert(pos, None);
                if pk {
                    primary = vec![pos];
                }
                if uq {
                    let n = unique_index_name(&indexes, &columns[pos].name);
                    indexes.push(IndexMeta { name: n, columns: vec![pos], unique: true });
                }
            }
            ast::AlterTableOperation::DropColumn { column_names, if_exists, .. } => {
                for cn in column_names {
                    let Some(pos) = columns.iter().position(|c| c.name.eq_ignore_ascii_case(&cn.value)) else {
                        if *if_exists {
                            continue;
                        }
                        return Err(SqlError::new(codes::ER_CANT_DROP_FIELD_OR_KEY, format!("Can't DROP '{}'; check that column/key exists", cn.value)));
                    };
                    columns.remove(pos);
                    map.remove(pos);
                    primary.retain(|&p| p != pos);
                    for ix in &mut indexes {
                        ix.columns.retain(|&p| p != pos);
                    }
                    indexes.retain(|ix| !ix.columns.is_empty());
                    shift_positions(&mut primary, &mut indexes, pos + 1, -1);
                }
            }
            ast::AlterTableOperation::ModifyColumn { col_name, data_type, options, column_position } => {
                let def = ast::ColumnDef {
                    name: col_name.clone(),
                    data_type: data_type.clone(),
                    options: options.iter().map(|o| ast::ColumnOptionDef { name: None, option: o.clone() }).collect(),
                };
                replace_column(&env, &mut columns, &mut primary, &col_name.value, &def, column_position.as_ref(), collation, &tname)?;
            }
            ast::AlterTableOperation::ChangeColumn { old_name, new_name, data_type, options, column_position } => {
                let def = ast::ColumnDef {
                    name: new_name.clone(),
                    data_type: data_type.clone(),
                    options: options.iter().map(|o| ast::ColumnOptionDef { name: None, option: o.clone() }).collect(),
                };
                replace_column(&env, &mut columns, &mut primary, &old_name.value, &def, column_position.as_ref(), collation, &tname)?;
            }
            ast::AlterTableOperation::AddConstraint { constraint: TableConstraint::ForeignKey(fk), .. } => added_keys.push(fk),
            ast::AlterTableOperation::AddConstraint { constraint: TableConstraint::Check(check), .. } => {
                let name = match &check.name {
                    Some(n) => n.value.clone(),
                    None => next_check_name(&tname, &checks),
                };
                if checks.iter().any(|c| c.name.eq_ignore_ascii_case(&name)) {
                    return Err(SqlError::new(codes::ER_CHECK_CONSTRAINT_DUP_NAME, format!("Duplicate check constraint name '{name}'.")));
                }
                checks.push(crate::catalog::CheckConstraint { name, expr: check.expr.as_ref().clone(), enforced: check.enforced.unwrap_or(true) });
            }
            ast::AlterTableOperation::AddConstraint { constraint, .. } => add_constraint(constraint, &mut columns, &mut primary, &mut indexes)?,
            ast::AlterTableOperation::DropForeignKey { name, .. } => drop_key(&mut keys, &name.value)?,
            ast::AlterTableOperation::DropConstraint { name, if_exists, .. } => {
                if keys.iter().any(|k| k.name.eq_ignore_ascii_case(&name.value)) {
                    drop_key(&mut keys, &name.value)?;
                } else if checks.iter().any(|c| c.name.eq_ignore_ascii_case(&name.value)) {
                    checks.retain(|c| !c.name.eq_ignore_ascii_case(&name.value));
                } else if indexes.iter().any(|i| i.unique && i.name.eq_ignore_ascii_case(&name.value)) {
                    indexes.retain(|i| !i.name.eq_ignore_ascii_case(&name.value));
                } else if !*if_exists {
                    return Err(SqlError::new(codes::ER_CONSTRAINT_NOT_FOUND, format!("Constraint '{}' does not exist.", name.value)));
                }
            }
            ast::AlterTableOperation::DropIndex { name } => {
                let before = indexes.len();
                indexes.retain(|i| !i.name.eq_ignore_ascii_case(&name.value));
                if indexes.len() == before {
                    return Err(SqlError::new(codes::ER_CANT_DROP_FIELD_OR_KEY, format!("Can't DROP '{}'; check that column/key exists", name.value)));
                }
            }
            ast::AlterTableOperation::DropPrimaryKey { .. } => primary.clear(),
            ast::AlterTableOperation::SetTblProperties { table_properties } => {
                let mut properties = table_properties.iter();
                while let Some(option) = properties.next() {
                    if let ast::SqlOption::KeyValue { key, value } = option
                        && key.value == crate::alter_options::RENAME_INDEX
                    {
                        let new = properties.next().and_then(|o| if let ast::SqlOption::KeyValue { value, .. } = o { Some(value) } else { None });
                        rename_index(&mut indexes, &tname, &option_text(value), &new.map(option_text).unwrap_or_default())?;
                        continue;
                    }
                    if let ast::SqlOption::KeyValue { key, value } = option
                        && key.value == crate::alter_options::DROP_CHECK
                    {
                        let name = option_text(value);
                        let before = checks.len();
                        checks.retain(|c| !c.name.eq_ignore_ascii_case(&name));
                        if checks.len() == before {
                            return Err(SqlError::new(codes::ER_CHECK_CONSTRAINT_NOT_FOUND, format!("Check constraint '{name}' is not found in the table.")));
                        }
                        continue;
                    }
                    table_option(info, &tname, option, &mut options, warnings)?;
                }
            }
            other => return Err(SqlError::unsupported(format!("ALTER TABLE {other}"))),
        }
    }
    let only_names = ops.iter().all(|op| matches!(op, ast::AlterTableOperation::RenameColumn { .. } | ast::AlterTableOperation::RenameTable { .. }));
    if only_names {
        // Names only: the rows stay where they are.
        let meta = t.renamed(&db, &tname, columns);
        catalog.replace_table(meta)?;
        catalog.repoint_children((&db, &tname), (&db, &tname), &renamed_columns);
        if let Some((new_db, new_name)) = rename_to {
            catalog.rename((&db, &tname), (&new_db, &new_name))?;
        }
        return Ok(());
    }
    let keys = keys_after_alter(catalog, info, (&db, &tname), &map, &columns, &primary, &mut indexes, keys, &added_keys)?;
    let added: Vec<String> = keys.iter().rev().take(added_keys.len()).map(|k| k.name.clone()).collect();
    rebuild(catalog, &db, &tname, columns, map, primary, indexes, keys, options, (info, warnings), Some(checks))?;
    catalog.repoint_children((&db, &tname), (&db, &tname), &renamed_columns);
    if let Some((new_db, new_name)) = rename_to {
        catalog.rename((&db, &tname), (&new_db, &new_name))?;
        return Ok(());
    }
    if info.foreign_key_checks() && !added.is_empty() {
        let t = catalog.table(&db, &tname)?;
        for fk in t.foreign_keys.iter().filter(|k| added.contains(&k.name)) {
            crate::dml::foreign_keys::check_existing_rows(catalog, t, fk)?;
        }
    }
    Ok(())
}

/// `RENAME INDEX old TO new`: 1176 when there is no index `old`, 1061 when another is `new`,
/// 1280 for `PRIMARY` (the primary key's name only).
fn rename_index(indexes: &mut [IndexMeta], table: &str, old: &str, new: &str) -> Result<()> {
    if new.eq_ignore_ascii_case("PRIMARY") {
        return Err(SqlError::new(codes::ER_WRONG_NAME_FOR_INDEX, format!("Incorrect index name '{new}'")));
    }
    if !old.eq_ignore_ascii_case(new) && indexes.iter().any(|i| i.name.eq_ignore_ascii_case(new)) {
        return Err(SqlError::new(codes::ER_DUP_KEYNAME, format!("Duplicate key name '{new}'")));
    }
    let index = indexes
        .iter_mut()
        .find(|i| i.name.eq_ignore_ascii_case(old))
        .ok_or_else(|| SqlError::new(codes::ER_KEY_DOES_NOT_EXITS, format!("Key '{old}' doesn't exist in table '{table}'")))?;
    new.clone_into(&mut index.name);
    Ok(())
}

/// Removes the key `name` (1091 when the table has none of that name).
pub(super) fn drop_key(keys: &mut Vec<ForeignKey>, name: &str) -> Result<()> {
    let before = keys.len();
    keys.retain(|k| !k.name.eq_ignore_ascii_case(name));
    if keys.len() == before {
        return Err(SqlError::new(codes::ER_CANT_DROP_FIELD_OR_KEY, format!("Can't DROP '{name}'; check that column/key exists")));
    }
    Ok(())
}

/// The table's keys after ALTER TABLE: the ones it kept, moved to their columns' new
/// positions (`map`: new position -> old), and the ones it adds, declared on the new shape.
///
/// # Errors
/// 1828 (a dropped column that a key uses), 1829 (a dropped column another table's key
/// refers to), and [`foreign_keys::declare`]'s.
#[allow(clippy::too_many_arguments)]
pub(super) fn keys_after_alter(
    catalog: &Catalog,
    info: &SessionInfo,
    (db, name): (&str, &str),
    map: &[Option<usize>],
    columns: &[Column],
    primary: &[usize],
    indexes: &mut Vec<IndexMeta>,
    kept: Vec<ForeignKey>,
    added: &[&ast::ForeignKeyConstraint],
) -> Result<Vec<ForeignKey>> {
    let old = catalog.table(db, name)?;
    let mut keys = Vec::with_capacity(kept.len() + added.len());
    for mut fk in kept {
        for c in &mut fk.columns {
            let old_name = &old.columns[*c].name;
            *c = map.iter().position(|m| *m == Some(*c)).ok_or_else(|| {
                SqlError::new(codes::ER_FK_COLUMN_CANNOT_DROP, format!("Cannot drop column '{old_name}': needed in a foreign key constraint '{}'", fk.name))
            })?;
        }
        let self_reference = fk.refers_to(db, name);
        foreign_keys::check_kept(catalog, columns, &fk, self_reference.then_some(columns), info.foreign_key_checks())?;
        keys.push(fk);
    }
    if info.foreign_key_checks() {
        foreign_keys::check_referring(catalog, db, name, columns)?;
    }
    for (child, fk) in foreign_keys::children_of(catalog, db, name) {
        if let Some(gone) = fk.parent_columns.iter().find(|c| !columns.iter().any(|col| col.name.eq_ignore_ascii_case(c))) {
            return Err(SqlError::new(
                codes::ER_FK_COLUMN_CANNOT_DROP_CHILD,
                format!("Cannot drop column '{gone}': needed in a foreign key constraint '{}' of table '{}'", fk.name, child.name),
            ));
        }
    }
    for fk in added {
        let child = foreign_keys::Child { db, name, columns, primary, indexes, existing: &keys };
        let fk = foreign_keys::declare(catalog, child, fk, info.foreign_key_checks())?;
        keys.push(fk);
    }
    Ok(keys)
}

/// Error 1553 when the new indexes of `old` leave a key without one: its own keys need an
/// index leading with their columns, and keys of other tables that refer to it one leading
/// with the columns they refer to.
pub(super) fn check_key_indexes(
    catalog: &Catalog,
    old: &TableMeta,
    (columns, primary, indexes): (&[Column], &[usize], &[IndexMeta]),
    keys: &[ForeignKey],
) -> Result<()> {
    let gone = || old.indexes.iter().find(|o| !indexes.iter().any(|i| i.name.eq_ignore_ascii_case(&o.name))).map_or("PRIMARY", |i| &i.name).to_owned();
    let refused = || SqlError::new(codes::ER_DROP_INDEX_FK, format!("Cannot drop index '{}': needed in a foreign key constraint", gone()));
    if keys.iter().any(|k| !foreign_keys::leads_an_index(&k.columns, primary, indexes)) {
        return Err(refused());
    }
    for (child, fk) in foreign_keys::children_of(catalog, &old.db, &old.name) {
        if child.id == old.id {
            continue;
        }
        let positions: Option<Vec<usize>> = fk.parent_columns.iter().map(|c| columns.iter().position(|col| col.name.eq_ignore_ascii_case(c))).collect();
        if positions.is_some_and(|p| !foreign_keys::leads_an_index(&p, primary, indexes)) {
            return Err(refused());
        }
    }
    Ok(())
}

/// MODIFY / CHANGE COLUMN in place (moving a column with FIRST/AFTER is not supported).
#[allow(clippy::too_many_arguments)]
pub(super) fn replace_column(
    env: &Env<'_>,
    columns: &mut [Column],
    primary: &mut Vec<usize>,
    old: &str,
    def: &ast::ColumnDef,
    position: Option<&ast::MySQLColumnPosition>,
    collation: Collation,
    table: &str,
) -> Result<()> {
    if position.is_some() {
        return Err(SqlError::unsupported("FIRST/AFTER in MODIFY COLUMN"));
    }
    let pos = columns.iter().position(|c| c.name.eq_ignore_ascii_case(old)).ok_or_else(|| SqlError::bad_field(old, table))?;
    let (mut col, pk, _) = column_from_ast(env, def, collation)?;
    if primary.contains(&pos) {
        col.nullable = false;
    }
    columns[pos] = col;
    if pk && primary.is_empty() {
        *primary = vec![pos];
    }
    Ok(())
}

pub(super) fn shift_positions(primary: &mut [usize], indexes: &mut [IndexMeta], from: usize, delta: isize) {
    let shift = |p: &mut usize| {
        if *p >= from {
            *p = (*p as isize + delta) as usize;
        }
    };
    primary.iter_mut().for_each(shift);
    for ix in indexes {
        ix.columns.iter_mut().for_each(shift);
    }
}
