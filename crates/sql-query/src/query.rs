//! SELECT: planning a query block (FROM, access paths, grouping, ordering) and
//! running it against a read view.
//!
//! A query block reads its tables left to right with nested loops, and hands each
//! joined row straight to grouping or projection. Each table's access path is chosen
//! from the conjuncts of WHERE (inner joins) or ON: a point lookup when every primary
//! key column is equal to a value known before the table is read, a key range or IN
//! list on a one-column primary key, an equality prefix of a secondary index, a hash
//! join (`hash_join`) for a column equality with an earlier table, or else a full scan. The chosen path only narrows what is
//! read; the whole condition is always evaluated on each row, so a path can never
//! change a result.

use std::cell::RefCell;

use quill_storage::{Collation, ReadView, Row, ScanOrder, Value};

use crate::cte::{Ctes, WorkTable};
use crate::expr::{AggSpec, Expr};
use crate::system_tables::SystemTables;
use quill_sql_context::catalog::Catalog;
use quill_sql_context::locking::LockSpec;
use quill_sql_context::session_info::SessionInfo;
use quill_sql_types::types::SqlType;

/// Column flags as the protocol sends them.
mod access;
mod executor;
mod planner;

pub(crate) use access::key_value;
pub use access::{choose_access, locking_candidates};
pub use executor::{run_select, run_select_into};
pub use planner::{object_name_parts, plan_query, resolve_table_name};

pub mod flags {
    pub const NOT_NULL: u16 = 1;
    pub const PRI_KEY: u16 = 2;
    pub const UNIQUE_KEY: u16 = 4;
    pub const MULTIPLE_KEY: u16 = 8;
    pub const BLOB: u16 = 16;
    pub const UNSIGNED: u16 = 32;
    pub const BINARY: u16 = 128;
    pub const AUTO_INCREMENT: u16 = 512;
    pub const TIMESTAMP: u16 = 1024;
    pub const ENUM: u16 = 256;
    pub const SET: u16 = 2048;
    pub const NUM: u16 = 32768;
}

/// What a statement runs against.
pub struct Env<'a> {
    pub catalog: &'a Catalog,
    pub view: ReadView,
    pub params: &'a [Value],
    /// NOW() for this statement: local time, zone-less microseconds.
    pub now_us: i64,
    pub info: &'a SessionInfo,
    /// A locking read (FOR UPDATE / FOR SHARE, SERIALIZABLE) or a write's scan: each row
    /// is locked as the scan reaches it and read current.
    pub lock: Option<LockSpec>,
    /// Strict-mode writes: division by zero is error 1365 rather than NULL.
    pub div_zero_is_error: bool,
    /// The common table expressions a table name may mean here (`cte`).
    pub ctes: Ctes<'a>,
    /// Views being planned around this point, outermost first (`views`).
    pub views_open: usize,
    /// Where `information_schema` and `performance_schema` tables come from.
    pub system_tables: &'a dyn SystemTables,
}

impl<'a> Env<'a> {
    /// An environment for a plain (non-locking, non-writing) evaluation.
    #[must_use]
    pub fn new(catalog: &'a Catalog, view: ReadView, params: &'a [Value], now_us: i64, info: &'a SessionInfo, system_tables: &'a dyn SystemTables) -> Env<'a> {
        Env { catalog, view, params, now_us, info, lock: None, div_zero_is_error: false, ctes: Ctes::default(), views_open: 0, system_tables }
    }

    /// How many views enclose this point of the statement.
    #[must_use]
    pub fn view_depth(&self) -> usize {
        self.views_open
    }

    /// The environment a view's query is planned in: no CTE of the reader's is visible.
    #[must_use]
    pub fn inside_view(&self) -> Env<'a> {
        Env { ctes: Ctes::default(), views_open: self.views_open + 1, ..*self }
    }

    /// The same environment, where `ctes` are the visible common table expressions.
    #[must_use]
    pub fn with_ctes<'b>(&'b self, ctes: Ctes<'b>) -> Env<'b> {
        Env {
            catalog: self.catalog,
            view: self.view,
            params: self.params,
            now_us: self.now_us,
            info: self.info,
            lock: self.lock,
            div_zero_is_error: self.div_zero_is_error,
            ctes,
            views_open: self.views_open,
            system_tables: self.system_tables,
        }
    }
}

/// A result column's metadata.
#[derive(Debug, Clone)]
pub struct OutColumn {
    pub name: String,
    pub org_name: String,
    pub table: String,
    pub org_table: String,
    pub db: String,
    pub ty: SqlType,
    pub flags: u16,
}

impl OutColumn {
    #[must_use]
    pub fn computed(name: &str, ty: SqlType) -> OutColumn {
        OutColumn { name: name.to_owned(), org_name: String::new(), table: String::new(), org_table: String::new(), db: String::new(), ty, flags: 0 }
    }
}

/// Rows with their column metadata.
#[derive(Debug, Clone, Default)]
pub struct ResultSet {
    pub columns: Vec<OutColumn>,
    pub rows: Vec<Row>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinKind {
    Inner,
    Left,
}

/// How a table's rows are found.
#[derive(Debug, Clone)]
pub enum Access {
    Full,
    /// Every primary key column equals a value.
    PkPoint(Vec<Expr>),
    /// One-column primary key in a list of values.
    PkIn(Vec<Expr>),
    /// One-column primary key in a range.
    PkRange {
        low: Option<(Expr, bool)>,
        high: Option<(Expr, bool)>,
    },
    /// Equality on the leading columns of secondary index `index`.
    IndexEq {
        index: usize,
        values: Vec<Expr>,
    },
    /// A range on the first column of secondary index `index`.
    IndexRange {
        index: usize,
        low: Option<(Expr, bool)>,
        high: Option<(Expr, bool)>,
    },
    /// Equalities with earlier tables, found through a hash table of this one built once
    /// per statement (see `hash_join`).
    Hash(Vec<crate::hash_join::HashKey>),
}

#[derive(Debug)]
pub enum SourceData {
    Table {
        db: String,
        name: String,
        id: u64,
    },
    /// A derived table or a virtual table: rows computed before the block runs.
    Rows(RefCell<Option<Vec<Row>>>, Option<Box<SelectPlan>>),
    /// A recursive CTE's name inside its recursive blocks: the rows its last round added.
    Work(WorkTable),
}

#[derive(Debug)]
pub struct Source {
    pub data: SourceData,
    pub offset: usize,
    pub width: usize,
    pub kind: JoinKind,
    pub on: Option<Expr>,
    pub access: Access,
    /// Column types, for coercing lookup values.
    pub types: Vec<SqlType>,
    /// The index the access path reads (`PRIMARY` or a secondary index's name), for EXPLAIN.
    pub key_name: Option<String>,
    /// The built side of an [`Access::Hash`] source.
    pub hash_table: crate::hash_join::HashTable,
    /// Which way a plain read walks the access path's key: descending when ORDER BY ...
    /// DESC follows it (`order_follows_scan`).
    pub order: ScanOrder,
    /// For the first table of a LEFT-joined parenthesized join (`a LEFT JOIN (b JOIN c ON
    /// x) ON y`, this is `b`): the level of the join's last table (`c`). A row of `a` that
    /// no whole row of the parenthesized join matches gets NULLs for all of its tables.
    /// `None` for every other source, whose own level is all a missing match fills.
    pub group_end: Option<usize>,
    /// The parenthesized joins whose last table this is, innermost first: each one's
    /// condition, tested once its whole row is read.
    pub closes: Vec<GroupClose>,
}

/// A parenthesized join of two or more tables, seen from its last table's level: its join
/// condition (`y` in `a LEFT JOIN (b JOIN c ON x) ON y`) reads any of its tables and those
/// before it, so it is tested only once the last one is read (`executor::finish_level`).
#[derive(Debug, Clone)]
pub struct GroupClose {
    /// The level of the parenthesized join's first table.
    pub start: usize,
    /// Its ON condition (with USING's and NATURAL's equalities), if any.
    pub on: Option<Expr>,
    /// Whether it is the right side of a LEFT JOIN: a row passing `on` marks the
    /// first table's level as matched, so it is not filled with NULLs.
    pub left: bool,
}

impl Source {
    /// A source read whole (`Access::Full`) until the planner chooses its access path.
    #[must_use]
    pub fn new(data: SourceData, offset: usize, width: usize, kind: JoinKind, types: Vec<SqlType>) -> Source {
        Source {
            data,
            offset,
            width,
            kind,
            on: None,
            access: Access::Full,
            types,
            key_name: None,
            hash_table: Default::default(),
            order: ScanOrder::Ascending,
            group_end: None,
            closes: Vec::new(),
        }
    }
}

#[derive(Debug)]
pub struct Block {
    pub sources: Vec<Source>,
    /// WHERE: what is left to test on each whole joined row (see `level_filters`).
    pub filter: Option<Expr>,
    /// The WHERE conjuncts each join level can test as soon as its row is read: those that
    /// read no column of a later source (`split_where`). So a join of many tables skips a
    /// combination when its first tables already fail, instead of testing every whole row.
    pub level_filters: Vec<Option<Expr>>,
    pub grouped: bool,
    pub group_by: Vec<Expr>,
    pub aggs: Vec<AggSpec>,
    pub having: Option<Expr>,
    /// Window function calls (`window`), computed once the rows are grouped and filtered.
    pub windows: Vec<crate::window::WindowSpec>,
    pub projection: Vec<Expr>,
    pub distinct: bool,
    pub order_by: Vec<(Expr, bool, Collation)>,
    pub limit: Option<Expr>,
    pub offset: Option<Expr>,
    /// Width of the joined input row.
    pub width: usize,
}

#[derive(Debug)]
pub enum PlanKind {
    Block(Box<Block>),
    /// UNION, INTERSECT or EXCEPT (`op`), of distinct rows or (`all`) of every row.
    Union {
        op: SetOp,
        left: Box<SelectPlan>,
        right: Box<SelectPlan>,
        all: bool,
        order_by: Vec<(usize, bool)>,
        limit: Option<Expr>,
        offset: Option<Expr>,
    },
    /// A recursive common table expression (`cte`): the seeds' rows, then rounds of the
    /// recursive blocks over the rows the previous round added, until one adds none.
    Recursive {
        seeds: Vec<SelectPlan>,
        steps: Vec<SelectPlan>,
        distinct: bool,
        work: WorkTable,
    },
}

/// A set operation between two queries' rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetOp {
    Union,
    /// Rows in both (with ALL, as many times as in both).
    Intersect,
    /// Rows of the left not in the right (with ALL, as many times more as the left has them).
    Except,
}

#[derive(Debug)]
pub struct SelectPlan {
    pub columns: Vec<OutColumn>,
    pub kind: PlanKind,
}

// ---------------------------------------------------------------------------
// Planning.

// ---------------------------------------------------------------------------
// Execution.
