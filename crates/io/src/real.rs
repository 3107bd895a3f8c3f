//! [`RealFs`]: the seam over the operating system's files (`std::fs`, positional I/O).

use std::fs::OpenOptions;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

use crate::{File, Fs};

/// The real file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct RealFs;

struct RealFile(std::fs::File);

impl File for RealFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let mut done = 0;
        while done < buf.len() {
            match self.0.read_at(&mut buf[done..], offset + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(done)
    }

    fn write_at(&self, data: &[u8], offset: u64) -> io::Result<()> {
        self.0.write_all_at(data, offset)
    }

    fn sync_data(&self) -> io::Result<()> {
        self.0.sync_data()
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.0.metadata()?.len())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }

    #[cfg(target_os = "linux")]
    fn read_cached(&self, buf: &mut [u8], offset: u64) -> bool {
        // RWF_NOWAIT: EAGAIN rather than wait for the disk; a short read is read again whole.
        let want = buf.len();
        rustix::io::preadv2(&self.0, &mut [io::IoSliceMut::new(buf)], offset, rustix::io::ReadWriteFlags::NOWAIT).is_ok_and(|n| n == want)
    }

    #[cfg(target_os = "linux")]
    fn zero_range(&self, offset: u64, len: u64) -> io::Result<()> {
        use rustix::fs::FallocateFlags;
        // ZERO_RANGE (ext4, XFS) leaves the blocks allocated, as unwritten extents; PUNCH_HOLE
        // (more file systems) frees them. Either keeps the size and reads back as zeros; a
        // file system with neither gets the zeros written.
        for flags in [FallocateFlags::ZERO_RANGE, FallocateFlags::PUNCH_HOLE] {
            match rustix::fs::fallocate(&self.0, flags | FallocateFlags::KEEP_SIZE, offset, len) {
                Ok(()) => return Ok(()),
                Err(rustix::io::Errno::OPNOTSUPP | rustix::io::Errno::INVAL | rustix::io::Errno::NOSYS) => {}
                Err(e) => return Err(e.into()),
            }
        }
        crate::write_zeros(self, offset, len)
    }

    fn will_need(&self, offset: u64, len: u64) {
        // A hint: a kernel or file system without it reads the bytes when they are asked for.
        let _ = rustix::fs::fadvise(&self.0, offset, std::num::NonZeroU64::new(len), rustix::fs::Advice::WillNeed);
    }
}

impl Fs for RealFs {
    fn open(&self, path: &Path, create: bool) -> io::Result<Arc<dyn File>> {
        let file = OpenOptions::new().read(true).write(true).create(create).truncate(false).open(path)?;
        Ok(Arc::new(RealFile(file)))
    }

    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        std::fs::create_dir_all(path)
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            if entry.file_type()?.is_file() {
                names.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
        names.sort();
        Ok(names)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        std::fs::File::open(dir)?.sync_all()
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }

    fn modified(&self, path: &Path) -> io::Result<std::time::SystemTime> {
        std::fs::metadata(path)?.modified()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_the_page_cache_holds_is_answered_at_once_and_one_past_the_end_is_not() {
        let dir = std::env::temp_dir().join(format!("quill-io-read-cached-{}", std::process::id()));
        RealFs.create_dir_all(&dir).unwrap();
        let file = RealFs.open(&dir.join("f"), true).unwrap();
        let data: Vec<u8> = (0..8192u32).map(|i| i as u8).collect();
        file.write_at(&data, 0).unwrap();
        let mut buf = vec![0; 4096];
        // Just written: in the page cache (RWF_NOWAIT is Linux 4.14 and later).
        assert!(file.read_cached(&mut buf, 4096), "a block the page cache holds is read at once");
        assert_eq!(buf, data[4096..]);
        assert!(!file.read_cached(&mut buf, 6144), "a read past the end is not whole");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_zeroed_range_reads_as_zeros_and_the_rest_and_the_length_stay() {
        let dir = std::env::temp_dir().join(format!("quill-io-zero-range-{}", std::process::id()));
        RealFs.create_dir_all(&dir).unwrap();
        let file = RealFs.open(&dir.join("f"), true).unwrap();
        let data: Vec<u8> = (0..3 * 4096 + 100).map(|i| (i % 251) as u8 + 1).collect();
        file.write_at(&data, 0).unwrap();
        // Unaligned at both ends: the file system zeroes whole blocks inside, bytes at the edges.
        file.zero_range(1000, 2 * 4096).unwrap();
        file.sync_data().unwrap();
        let back = file.read_all().unwrap();
        assert_eq!(back.len(), data.len());
        assert_eq!(back[..1000], data[..1000]);
        assert!(back[1000..1000 + 2 * 4096].iter().all(|&b| b == 0));
        assert_eq!(back[1000 + 2 * 4096..], data[1000 + 2 * 4096..]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
