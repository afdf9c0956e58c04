//! The initramfs archive: a writer of the cpio "newc" format the kernel
//! unpacks into its root file system (uncompressed: the kernel reads it as
//! is, and compressing 100+ MB would cost more than the copy it saves).
//!
//! Layout (the kernel's Documentation/driver-api/early-userspace/buffer-format.rst
//! and usr/gen_init_cpio.c): each entry is a 110-byte ASCII header — the magic
//! `070701` and 13 fields of 8 hex digits (ino, mode, uid, gid, nlink, mtime,
//! filesize, devmajor, devminor, rdevmajor, rdevminor, namesize, check) — then
//! the NUL-terminated name, padded to a multiple of 4, then the data, padded
//! to a multiple of 4. A `TRAILER!!!` entry ends the archive. Names carry no
//! leading `/`. Written by hand (some 80 lines) rather than with a crate: the
//! `cpio` crate's newc writer is little maintained and we need only writing.

use std::io::{self, Read, Write};

/// File type bits of `mode` (see inode(7)).
const S_IFDIR: u32 = 0o040000;
const S_IFREG: u32 = 0o100000;
const S_IFLNK: u32 = 0o120000;

/// A newc archive being written to `out`; [`CpioWriter::finish`] ends it.
pub struct CpioWriter<W: Write> {
    out: W,
    offset: u64,
    next_ino: u32,
}

impl<W: Write> CpioWriter<W> {
    pub fn new(out: W) -> Self {
        CpioWriter {
            out,
            offset: 0,
            next_ino: 1,
        }
    }

    /// A directory `name` (no leading `/`) with permission bits `perm`.
    pub fn dir(&mut self, name: &str, perm: u32) -> io::Result<()> {
        self.header(name, S_IFDIR | perm, 2, 0)?;
        Ok(())
    }

    /// A symbolic link `name` → `target`.
    pub fn symlink(&mut self, name: &str, target: &str) -> io::Result<()> {
        self.header(name, S_IFLNK | 0o777, 1, target.len() as u64)?;
        self.data(&mut target.as_bytes(), target.len() as u64)
    }

    /// A regular file `name` of `size` bytes read from `content`.
    pub fn file(
        &mut self,
        name: &str,
        perm: u32,
        size: u64,
        content: &mut dyn Read,
    ) -> io::Result<()> {
        self.header(name, S_IFREG | perm, 1, size)?;
        self.data(content, size)
    }

    /// Writes the trailer and returns the output.
    pub fn finish(mut self) -> io::Result<W> {
        self.next_ino = 0;
        self.header("TRAILER!!!", 0, 1, 0)?;
        self.out.flush()?;
        Ok(self.out)
    }

    fn header(&mut self, name: &str, mode: u32, nlink: u32, size: u64) -> io::Result<()> {
        let size32 = u32::try_from(size).map_err(|_| {
            io::Error::other(format!("{name}: {size} bytes exceeds cpio's 4 GiB limit"))
        })?;
        let ino = self.next_ino;
        if ino != 0 {
            self.next_ino += 1;
        }
        let fields = [
            ino,
            mode,
            0,
            0,
            nlink,
            0,
            size32,
            0,
            0,
            0,
            0,
            name.len() as u32 + 1,
            0,
        ];
        let mut head = String::with_capacity(110);
        head.push_str("070701");
        for f in fields {
            head.push_str(&format!("{f:08x}"));
        }
        self.write(head.as_bytes())?;
        self.write(name.as_bytes())?;
        self.write(&[0])?;
        self.pad()
    }

    fn data(&mut self, content: &mut dyn Read, size: u64) -> io::Result<()> {
        let copied = io::copy(&mut content.take(size), &mut self.out)?;
        if copied != size {
            return Err(io::Error::other(format!(
                "file shrank while archiving: {copied} of {size} bytes"
            )));
        }
        self.offset += copied;
        self.pad()
    }

    fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(bytes)?;
        self.offset += bytes.len() as u64;
        Ok(())
    }

    fn pad(&mut self) -> io::Result<()> {
        let rem = (4 - self.offset % 4) % 4;
        self.write(&[0u8; 3][..rem as usize])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal newc reader (name, mode, data) to round-trip the writer.
    fn read_all(mut bytes: &[u8]) -> Vec<(String, u32, Vec<u8>)> {
        let mut out = Vec::new();
        let start = bytes.len();
        let pad = |pos: usize| (4 - pos % 4) % 4;
        loop {
            assert_eq!(&bytes[..6], b"070701");
            let field = |i: usize| {
                u32::from_str_radix(
                    std::str::from_utf8(&bytes[6 + 8 * i..14 + 8 * i]).unwrap(),
                    16,
                )
                .unwrap()
            };
            let (mode, size, namesize) = (field(1), field(6) as usize, field(11) as usize);
            let name = String::from_utf8(bytes[110..110 + namesize - 1].to_vec()).unwrap();
            assert_eq!(bytes[110 + namesize - 1], 0);
            let mut pos = 110 + namesize;
            pos += pad(start - bytes.len() + pos);
            bytes = &bytes[pos..];
            if name == "TRAILER!!!" {
                assert!(bytes.is_empty());
                return out;
            }
            let data = bytes[..size].to_vec();
            let skip = size + pad(start - bytes.len() + size);
            bytes = &bytes[skip..];
            out.push((name, mode, data));
        }
    }

    #[test]
    fn round_trips_dirs_files_and_links() {
        let mut w = CpioWriter::new(Vec::new());
        w.dir("bin", 0o755).unwrap();
        w.file("bin/a", 0o755, 5, &mut &b"hello"[..]).unwrap();
        w.file("empty", 0o644, 0, &mut &b""[..]).unwrap();
        w.symlink("sbin/modprobe", "/bin/busybox").unwrap();
        let bytes = w.finish().unwrap();
        assert_eq!(bytes.len() % 4, 0);
        let entries = read_all(&bytes);
        assert_eq!(entries.len(), 4);
        assert_eq!(entries[0], ("bin".into(), 0o040755, vec![]));
        assert_eq!(entries[1], ("bin/a".into(), 0o100755, b"hello".to_vec()));
        assert_eq!(entries[2], ("empty".into(), 0o100644, vec![]));
        assert_eq!(
            entries[3],
            ("sbin/modprobe".into(), 0o120777, b"/bin/busybox".to_vec())
        );
    }

    #[test]
    fn header_layout_matches_gen_init_cpio() {
        let mut w = CpioWriter::new(Vec::new());
        w.file("ab", 0o644, 1, &mut &b"x"[..]).unwrap();
        let bytes = w.finish().unwrap();
        let head = std::str::from_utf8(&bytes[..110]).unwrap();
        // magic, ino 1, mode 0100644, uid, gid, nlink 1, mtime, size 1, 4 dev fields, namesize 3, check.
        let want = "070701".to_string()
            + "00000001000081a4000000000000000000000001000000000000000100000000"
            + "000000000000000000000000"
            + "0000000300000000";
        assert_eq!(head, want);
        // Name "ab\0" ends at 113, padded to 116; data at 116, padded to 120.
        assert_eq!(&bytes[110..116], b"ab\0\0\0\0");
        assert_eq!(&bytes[116..120], b"x\0\0\0");
        assert_eq!(&bytes[120..126], b"070701");
    }

    #[test]
    fn short_content_is_an_error() {
        let mut w = CpioWriter::new(Vec::new());
        assert!(w.file("a", 0o644, 10, &mut &b"abc"[..]).is_err());
    }
}
