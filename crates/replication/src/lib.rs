//! Replication: the one commit log, seen from outside as MySQL's binary log.
//!
//! Quill keeps no second log. A replica or a change-capture client reads binlog events that
//! are made, on demand, from the commit log's records (`docs/binlog.md`): each committed
//! transaction becomes a GTID event, a `BEGIN`, a TABLE_MAP per table it wrote, its row
//! events and an XID; each DDL statement a GTID event and its QUERY.
//!
//! - [`events`]: one committed transaction made into events;
//! - [`binlog`]: virtual binary log files over the log's segments, their positions, and the
//!   dump a replica reads (`COM_BINLOG_DUMP`);
//! - [`gtid`]: GTID sets, as the replica keeps them and `@@gtid_executed` prints them;
//! - [`replica`]: a Quill replica following a source and applying its transactions;
//! - [`semisync`]: the source's semi-synchronous acknowledgements.
//!
//! Where it sits: above `sql` (the catalog says what a table's columns are), `protocol` (the
//! event encoding) and `log` (the records); `server` runs it.

pub mod binlog;
pub mod events;
pub mod gtid;
pub mod replica;
pub mod semisync;
