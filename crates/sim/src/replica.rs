//! A replica in the simulation: a second engine, on a simulated disk of its own, that pulls
//! the source's binary log (a dump by GTID, as a replica that reconnects asks) and applies it
//! through the replica's applier (`quill_replication::replica::apply_events`), and crashes
//! on its own.
//!
//! What is checked, after the replica recovers and after it catches up with a recovered
//! source: the source's GTIDs the replica holds (`mysql.gtid_executed`) are a prefix `1..=j`
//! of the source's, and its tables are the model's after `j` transactions; once caught up,
//! `j` is everything the source recovered.

use std::path::Path;
use std::sync::Arc;

use mysql_common::binlog::EventStreamReader;
use mysql_common::binlog::consts::BinlogVersion;
use quill_io::{Fs, SimFs};
use quill_replication::binlog::{Dump, FIRST_EVENT_POSITION, Origin, events};
use quill_sql::{Engine, Outcome, Session};
use quill_storage::Value;

use crate::model::Model;
use crate::{DATADIR, Setup, settings};

pub struct Replica {
    pub fs: SimFs,
    pub engine: Arc<Engine>,
    setup: Setup,
}

impl Replica {
    /// A new replica on an empty disk.
    ///
    /// # Errors
    /// The engine does not open.
    pub fn new(setup: Setup) -> Result<Replica, String> {
        let fs = SimFs::new();
        fs.create_dir_all(Path::new(DATADIR)).map_err(|e| e.to_string())?;
        let engine = open(&fs, setup)?;
        Ok(Replica { fs, engine, setup })
    }

    /// The replica after its disk crashed as `after` shows it, recovered.
    ///
    /// # Errors
    /// Recovery failed.
    pub fn recover(&mut self, after: SimFs) -> Result<(), String> {
        self.fs = after;
        self.engine = open(&self.fs, self.setup).map_err(|e| format!("the replica's recovery failed: {e}"))?;
        Ok(())
    }

    /// The source's transactions the replica holds: `j` for `1..=j`.
    ///
    /// # Errors
    /// A hole in them, or a query that failed.
    pub async fn applied(&self, source_uuid: &str) -> Result<u64, String> {
        if self.engine.catalog().table("mysql", "gtid_executed").is_err() {
            return Ok(0);
        }
        let mut session = Session::new(Arc::clone(&self.engine), 1, "root", "localhost");
        let sql = format!("SELECT interval_start, interval_end FROM mysql.gtid_executed WHERE source_uuid = '{source_uuid}' ORDER BY interval_start");
        let rows = match session.run(&sql).await.pop() {
            Some(Ok(Outcome::Rows(rs))) => rs.rows,
            other => return Err(format!("{sql}: {other:?}")),
        };
        session.close();
        let mut j = 0;
        for row in rows {
            let (start, end) = (int(&row[0]), int(&row[1]));
            if start != j + 1 {
                return Err(format!("the replica holds the source's GTIDs up to {j}, then from {start}: a hole"));
            }
            j = end;
        }
        Ok(j)
    }

    /// Pulls what the source's durable binary log holds that the replica lacks, and applies
    /// it. Returns how many of the source's transactions the replica then holds.
    ///
    /// # Errors
    /// The dump or the applier failed.
    pub async fn pull(&mut self, source: &Arc<Engine>) -> Result<u64, String> {
        let origin = Origin::of(source).ok_or("the source has no log")?;
        let uuid_text = source.global("server_uuid").unwrap_or_default();
        let has = self.applied(&uuid_text).await?;
        let requested = if has == 0 { Vec::new() } else { vec![(origin.source.uuid, vec![(1, has + 1)])] };
        let mut dump = Dump::open(origin, "", FIRST_EVENT_POSITION, Some(&requested)).map_err(|e| format!("the replica's dump: {e}"))?;
        let mut bytes = Vec::new();
        while dump.fill(&mut bytes).map_err(|e| format!("the replica's dump: {e}"))? {}
        let mut reader = EventStreamReader::new(BinlogVersion::Version4);
        let mut decoded = Vec::new();
        let mut seen_format = false;
        for raw in events(&bytes) {
            seen_format |= raw.get(4) == Some(&15);
            if seen_format {
                let mut rest = raw;
                decoded.push(reader.read(&mut rest).map_err(|e| format!("a binary log event: {e}"))?.ok_or("a truncated event")?);
            }
        }
        let fs: Arc<dyn Fs> = Arc::new(self.fs.clone());
        quill_replication::replica::apply_events(&self.engine, fs, Path::new(DATADIR).to_path_buf(), decoded)
            .await
            .map_err(|(code, message)| format!("the replica's applier stopped: {code} {message}"))?;
        self.applied(&uuid_text).await
    }

    /// Checks that the replica's tables are the model's after the `j` transactions it holds.
    ///
    /// # Errors
    /// What differs.
    pub async fn check(&self, model: &Model, source_uuid: &str) -> Result<u64, String> {
        let j = self.applied(source_uuid).await?;
        if j == 0 {
            return Ok(0);
        }
        let mut session = Session::new(Arc::clone(&self.engine), 1, "root", "localhost");
        let checked = crate::check::tables(&mut session, &model.state_at(j)).await.map_err(|e| format!("the replica at GTID {j}: {e}"));
        session.close();
        checked.map(|()| j)
    }
}

fn open(fs: &SimFs, setup: Setup) -> Result<Arc<Engine>, String> {
    let mut vars = settings(setup);
    vars.values.insert("server_id", "2".into());
    let fs: Arc<dyn Fs> = Arc::new(fs.clone());
    quill_sql::durability::open_with(vars, fs, Path::new(DATADIR), |config| {
        config.log.writer = quill_log::WriterMode::Inline;
        config.replay_threads = 1;
        config.redo_waiting_bytes = setup.redo_waiting_bytes;
        config.drain_redo_in_background = false;
        config.log.on_failure = Arc::new(|message| panic!("the replica's commit log failed: {message}"));
    })
    .map(|(engine, _)| engine)
    .map_err(|e| e.to_string())
}

fn int(v: &Value) -> u64 {
    match v {
        Value::Int(i) => u64::try_from(*i).unwrap_or(0),
        Value::UInt(u) => *u,
        _ => 0,
    }
}
