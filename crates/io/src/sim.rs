//! [`SimFs`]: an in-memory disk that keeps what was written apart from what is durable, and
//! can crash.
//!
//! Each file has its durable bytes and a list of unsynced operations (writes and size
//! changes); `sync_data` folds the list into the durable bytes. Names are tracked the same
//! way: the live namespace, the durable one, and the unsynced name changes in order, folded
//! in by `sync_dir` of their directory.
//!
//! [`SimFs::crash`] returns the disk as a machine would find it after power loss at that
//! moment, chosen by a seed: from the durable state, each unsynced write of each file is
//! independently dropped, kept, or torn (a prefix kept), each unsynced size change dropped or
//! kept, and a prefix of the unsynced name changes kept. The same seed gives the same disk, so
//! a failing seed replays. Directories are created durable at once (Quill creates its few
//! directories before writing anything that must survive).
//!
//! [`SimFs::crash_process`] is a kill -9 instead: the machine stays up, so every write the
//! process handed to the operating system is kept, synced or not.
//!
//! `fail_syncs_after(n)` makes every `sync_data` after the next `n` fail, to test fail-stop.
//! `set_capacity(Some(n))` makes a write or size change that would take the files with a
//! name past `n` bytes fail with `StorageFull` (ENOSPC), to test a full disk; removing a file
//! frees its bytes.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use crate::{File, Fs, parent_dir};

type Inode = u64;

#[derive(Debug, Clone)]
enum FileOp {
    Write { offset: u64, data: Vec<u8> },
    SetLen(u64),
}

#[derive(Debug, Clone, Default)]
struct Content {
    live: Vec<u8>,
    durable: Vec<u8>,
    unsynced: Vec<FileOp>,
}

fn apply(bytes: &mut Vec<u8>, op: &FileOp) {
    match op {
        FileOp::Write { offset, data } => {
            let start = usize::try_from(*offset).expect("offset fits in memory");
            if bytes.len() < start + data.len() {
                bytes.resize(start + data.len(), 0);
            }
            bytes[start..start + data.len()].copy_from_slice(data);
        }
        FileOp::SetLen(len) => bytes.resize(usize::try_from(*len).expect("length fits in memory"), 0),
    }
}

#[derive(Debug, Clone)]
enum NameOp {
    Create(PathBuf, Inode),
    Rename(PathBuf, PathBuf),
    Remove(PathBuf),
}

impl NameOp {
    fn dir(&self) -> PathBuf {
        match self {
            NameOp::Create(p, _) | NameOp::Rename(_, p) | NameOp::Remove(p) => parent_dir(p),
        }
    }

    fn apply(&self, names: &mut BTreeMap<PathBuf, Inode>) {
        match self {
            NameOp::Create(path, inode) => {
                names.insert(path.clone(), *inode);
            }
            NameOp::Rename(from, to) => {
                if let Some(inode) = names.remove(from) {
                    names.insert(to.clone(), inode);
                }
            }
            NameOp::Remove(path) => {
                names.remove(path);
            }
        }
    }
}

#[derive(Debug, Default)]
struct State {
    contents: HashMap<Inode, Content>,
    names: BTreeMap<PathBuf, Inode>,
    durable_names: BTreeMap<PathBuf, Inode>,
    unsynced_names: Vec<NameOp>,
    dirs: BTreeSet<PathBuf>,
    next_inode: Inode,
    /// `Some(n)`: n more syncs succeed, then every sync fails.
    syncs_before_failure: Option<u64>,
    /// `Some(n)`: the disk holds `n` bytes of named files.
    capacity: Option<u64>,
    /// Bytes asked for through [`File::will_need`] (a simulated disk reads nothing ahead).
    hinted_bytes: u64,
}

impl State {
    /// The disk a crash leaves: `names` and `contents` as they survived, all of it durable,
    /// nothing unsynced; the directories and limits as they were, syncs working again.
    fn after_crash(&self, names: BTreeMap<PathBuf, Inode>, contents: HashMap<Inode, Content>) -> State {
        State {
            contents,
            durable_names: names.clone(),
            names,
            unsynced_names: Vec::new(),
            dirs: self.dirs.clone(),
            next_inode: self.next_inode,
            syncs_before_failure: None,
            capacity: self.capacity,
            hinted_bytes: 0,
        }
    }

    /// Bytes held by files that have a name.
    fn used_bytes(&self) -> u64 {
        let inodes: BTreeSet<Inode> = self.names.values().copied().collect();
        inodes.iter().map(|i| self.contents[i].live.len() as u64).sum()
    }
}

/// What a crash did, for the message of a failing test.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CrashReport {
    pub writes_dropped: usize,
    pub writes_kept: usize,
    pub writes_torn: usize,
    pub name_changes_kept: usize,
    pub name_changes_dropped: usize,
}

/// A simulated disk. Cloning shares the disk.
#[derive(Clone, Default)]
pub struct SimFs {
    state: Arc<Mutex<State>>,
}

impl SimFs {
    #[must_use]
    pub fn new() -> SimFs {
        SimFs::default()
    }

    /// Every `sync_data` after the next `n` fails with an I/O error.
    pub fn fail_syncs_after(&self, n: u64) {
        self.state.lock().syncs_before_failure = Some(n);
    }

    /// Limits the disk to `capacity` bytes of named files (`None`: unlimited).
    pub fn set_capacity(&self, capacity: Option<u64>) {
        self.state.lock().capacity = capacity;
    }

    /// Bytes of its files that callers have said they will need ([`File::will_need`]).
    #[must_use]
    pub fn hinted_bytes(&self) -> u64 {
        self.state.lock().hinted_bytes
    }

    /// The disk after a power loss now, as `seed` chooses (see the module doc). Handles
    /// opened on this disk keep working on the old, dead one.
    #[must_use]
    pub fn crash(&self, seed: u64) -> (SimFs, CrashReport) {
        let state = self.state.lock();
        let mut rng = StdRng::seed_from_u64(seed);
        let mut report = CrashReport::default();

        let mut names = state.durable_names.clone();
        let keep_names = rng.random_range(0..=state.unsynced_names.len());
        for op in &state.unsynced_names[..keep_names] {
            op.apply(&mut names);
        }
        report.name_changes_kept = keep_names;
        report.name_changes_dropped = state.unsynced_names.len() - keep_names;

        let mut contents = HashMap::new();
        for &inode in names.values() {
            let content = &state.contents[&inode];
            let mut bytes = content.durable.clone();
            for op in &content.unsynced {
                match (op, rng.random_range(0..3_u8)) {
                    (_, 0) => report.writes_dropped += 1,
                    (FileOp::Write { offset, data }, 2) if !data.is_empty() => {
                        let kept = rng.random_range(0..data.len());
                        apply(&mut bytes, &FileOp::Write { offset: *offset, data: data[..kept].to_vec() });
                        report.writes_torn += 1;
                    }
                    (op, _) => {
                        apply(&mut bytes, op);
                        report.writes_kept += 1;
                    }
                }
            }
            contents.insert(inode, Content { live: bytes.clone(), durable: bytes, unsynced: Vec::new() });
        }
        let after = state.after_crash(names, contents);
        (SimFs { state: Arc::new(Mutex::new(after)) }, report)
    }

    /// The disk after the process was killed now (kill -9), with the machine still up: the
    /// operating system has every write and name change handed to it, synced or not, so
    /// all of them are kept. Handles opened on this disk keep working on the old one.
    #[must_use]
    pub fn crash_process(&self) -> SimFs {
        let state = self.state.lock();
        let contents = state
            .names
            .values()
            .map(|&inode| {
                let live = state.contents[&inode].live.clone();
                (inode, Content { durable: live.clone(), live, unsynced: Vec::new() })
            })
            .collect();
        let after = state.after_crash(state.names.clone(), contents);
        SimFs { state: Arc::new(Mutex::new(after)) }
    }

    /// Bytes of `path` as they are now (live, not necessarily durable).
    #[must_use]
    pub fn contents(&self, path: &Path) -> Option<Vec<u8>> {
        let state = self.state.lock();
        state.names.get(path).map(|inode| state.contents[inode].live.clone())
    }
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, format!("{}: no such file", path.display()))
}

impl Fs for SimFs {
    fn open(&self, path: &Path, create: bool) -> io::Result<Arc<dyn File>> {
        let mut state = self.state.lock();
        if !state.dirs.contains(&parent_dir(path)) {
            return Err(not_found(&parent_dir(path)));
        }
        let inode = match state.names.get(path) {
            Some(&inode) => inode,
            None if create => {
                state.next_inode += 1;
                let inode = state.next_inode;
                state.contents.insert(inode, Content::default());
                state.names.insert(path.to_path_buf(), inode);
                state.unsynced_names.push(NameOp::Create(path.to_path_buf(), inode));
                inode
            }
            None => return Err(not_found(path)),
        };
        Ok(Arc::new(SimFile { state: Arc::clone(&self.state), inode }))
    }

    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        let mut state = self.state.lock();
        for ancestor in path.ancestors() {
            state.dirs.insert(ancestor.to_path_buf());
        }
        Ok(())
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let state = self.state.lock();
        if !state.dirs.contains(dir) {
            return Err(not_found(dir));
        }
        Ok(state.names.keys().filter(|p| p.parent() == Some(dir)).filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned())).collect())
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        let mut state = self.state.lock();
        state.names.remove(path).ok_or_else(|| not_found(path))?;
        state.unsynced_names.push(NameOp::Remove(path.to_path_buf()));
        Ok(())
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        assert_eq!(parent_dir(from), parent_dir(to), "the simulated disk renames within a directory only");
        let mut state = self.state.lock();
        let inode = state.names.remove(from).ok_or_else(|| not_found(from))?;
        state.names.insert(to.to_path_buf(), inode);
        state.unsynced_names.push(NameOp::Rename(from.to_path_buf(), to.to_path_buf()));
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut state = self.state.lock();
        let (now, later): (Vec<NameOp>, Vec<NameOp>) = std::mem::take(&mut state.unsynced_names).into_iter().partition(|op| op.dir() == dir);
        for op in &now {
            op.apply(&mut state.durable_names);
        }
        state.unsynced_names = later;
        Ok(())
    }

    fn exists(&self, path: &Path) -> bool {
        let state = self.state.lock();
        state.names.contains_key(path) || state.dirs.contains(path)
    }

    /// The simulated disk keeps no times: every file is as old as the epoch, so retention by
    /// age removes what it may at once (the simulations test what a checkpoint covers).
    fn modified(&self, path: &Path) -> io::Result<std::time::SystemTime> {
        if self.exists(path) { Ok(std::time::UNIX_EPOCH) } else { Err(not_found(path)) }
    }
}

struct SimFile {
    state: Arc<Mutex<State>>,
    inode: Inode,
}

impl SimFile {
    fn record(&self, op: FileOp) -> io::Result<()> {
        let mut state = self.state.lock();
        let old_len = state.contents[&self.inode].live.len() as u64;
        let new_len = match &op {
            FileOp::Write { offset, data } => old_len.max(offset + data.len() as u64),
            FileOp::SetLen(len) => *len,
        };
        if let Some(capacity) = state.capacity
            && new_len > old_len
            && state.used_bytes() + (new_len - old_len) > capacity
        {
            return Err(io::Error::new(io::ErrorKind::StorageFull, "simulated disk full"));
        }
        let content = state.contents.get_mut(&self.inode).expect("inode exists while a handle does");
        apply(&mut content.live, &op);
        content.unsynced.push(op);
        Ok(())
    }
}

impl File for SimFile {
    fn will_need(&self, _offset: u64, len: u64) {
        self.state.lock().hinted_bytes += len;
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let state = self.state.lock();
        let live = &state.contents[&self.inode].live;
        let start = usize::try_from(offset).unwrap_or(usize::MAX).min(live.len());
        let n = buf.len().min(live.len() - start);
        buf[..n].copy_from_slice(&live[start..start + n]);
        Ok(n)
    }

    fn write_at(&self, data: &[u8], offset: u64) -> io::Result<()> {
        self.record(FileOp::Write { offset, data: data.to_vec() })
    }

    fn sync_data(&self) -> io::Result<()> {
        let mut state = self.state.lock();
        if let Some(left) = state.syncs_before_failure {
            if left == 0 {
                return Err(io::Error::other("simulated fsync failure"));
            }
            state.syncs_before_failure = Some(left - 1);
        }
        let content = state.contents.get_mut(&self.inode).expect("inode exists while a handle does");
        content.durable = content.live.clone();
        content.unsynced.clear();
        Ok(())
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.state.lock().contents[&self.inode].live.len() as u64)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.record(FileOp::SetLen(len))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn disk() -> (SimFs, PathBuf) {
        let fs = SimFs::new();
        let dir = PathBuf::from("/data");
        fs.create_dir_all(&dir).unwrap();
        (fs, dir)
    }

    #[test]
    fn synced_bytes_and_names_survive_every_crash() {
        let (fs, dir) = disk();
        let file = fs.open(&dir.join("a"), true).unwrap();
        file.write_at(b"durable", 0).unwrap();
        file.sync_data().unwrap();
        fs.sync_dir(&dir).unwrap();
        file.write_at(b"-maybe", 7).unwrap();
        for seed in 0..50 {
            let (after, _) = fs.crash(seed);
            let bytes = after.contents(&dir.join("a")).expect("a synced name survives");
            assert!(bytes.starts_with(b"durable"), "seed {seed}: {bytes:?}");
            assert!(b"durable-maybe".starts_with(&bytes) || bytes.len() == 13, "seed {seed}: {bytes:?}");
        }
    }

    #[test]
    fn an_unsynced_name_may_vanish_and_a_crash_replays_by_seed() {
        let (fs, dir) = disk();
        let file = fs.open(&dir.join("new"), true).unwrap();
        file.write_at(b"x", 0).unwrap();
        file.sync_data().unwrap();
        let outcomes: BTreeSet<bool> = (0..40).map(|seed| fs.crash(seed).0.exists(&dir.join("new"))).collect();
        assert_eq!(outcomes, BTreeSet::from([false, true]), "without sync_dir the name may or may not survive");
        assert_eq!(fs.crash(7).1, fs.crash(7).1, "same seed, same crash");
    }

    #[test]
    fn unsynced_writes_are_dropped_kept_or_torn_independently() {
        let (fs, dir) = disk();
        let file = fs.open(&dir.join("f"), true).unwrap();
        fs.sync_dir(&dir).unwrap();
        file.write_at(&[1; 8], 0).unwrap();
        file.write_at(&[2; 8], 8).unwrap();
        let mut seen = BTreeSet::new();
        for seed in 0..200 {
            let bytes = fs.crash(seed).0.contents(&dir.join("f")).unwrap();
            let first_whole = bytes.len() >= 8 && bytes[..8] == [1; 8];
            let second_present = bytes.len() > 8 && bytes[8] == 2;
            seen.insert((first_whole, second_present));
        }
        assert!(seen.contains(&(false, true)), "a later write can survive an earlier one: {seen:?}");
        assert!(seen.contains(&(true, false)) && seen.contains(&(true, true)), "{seen:?}");
    }

    #[test]
    fn rename_is_atomic_and_durable_after_sync_dir() {
        let (fs, dir) = disk();
        let tmp = fs.open(&dir.join("ckpt.tmp"), true).unwrap();
        tmp.write_at(b"snapshot", 0).unwrap();
        tmp.sync_data().unwrap();
        fs.rename(&dir.join("ckpt.tmp"), &dir.join("ckpt")).unwrap();
        fs.sync_dir(&dir).unwrap();
        for seed in 0..20 {
            let (after, _) = fs.crash(seed);
            assert_eq!(after.contents(&dir.join("ckpt")).as_deref(), Some(&b"snapshot"[..]));
            assert!(!after.exists(&dir.join("ckpt.tmp")));
        }
    }

    #[test]
    fn a_full_disk_refuses_growth_and_removal_frees_space() {
        let (fs, dir) = disk();
        fs.set_capacity(Some(10));
        let a = fs.open(&dir.join("a"), true).unwrap();
        a.write_at(&[1; 8], 0).unwrap();
        assert_eq!(a.write_at(&[1; 4], 8).unwrap_err().kind(), io::ErrorKind::StorageFull);
        a.write_at(&[2; 8], 0).unwrap();
        fs.remove(&dir.join("a")).unwrap();
        let b = fs.open(&dir.join("b"), true).unwrap();
        b.write_at(&[3; 10], 0).unwrap();
    }

    #[test]
    fn syncs_fail_after_the_chosen_count() {
        let (fs, dir) = disk();
        let file = fs.open(&dir.join("f"), true).unwrap();
        fs.fail_syncs_after(1);
        assert!(file.sync_data().is_ok());
        assert!(file.sync_data().is_err());
        assert!(file.sync_data().is_err());
    }
}
