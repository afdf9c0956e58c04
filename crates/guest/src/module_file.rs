//! Kernel module files as the guest's busybox `modprobe` can load them.
//! Debian's 6.1 kernels ship plain `.ko` files; from 6.12 they ship `.ko.xz`,
//! and other distributions use `.ko.zst` or `.ko.gz`. Busybox modutils load
//! only what the kernel's `init_module` takes (an ELF image, unless its
//! modprobe was built with compressed-module support, which Debian's
//! busybox-static is not), so compressed modules are decompressed here, on
//! the host, and enter the archive as plain `.ko` at the same path less the
//! suffix. The decoders are well-kept crates: liblzma (the xz reference
//! library), ruzstd (a pure-Rust zstd decoder) and flate2 (gzip).

use std::io::Read;
use std::path::Path;

/// How a module file is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    Xz,
    Zstd,
    Gzip,
}

impl Compression {
    /// The compression of module file `name`, or `None` when the name is not
    /// a kernel module's (`tls.ko`, `tls.ko.xz`, …).
    pub fn of(name: &str) -> Option<Compression> {
        let (_, suffix) = name.rsplit_once(".ko")?;
        match suffix {
            "" => Some(Compression::None),
            ".xz" => Some(Compression::Xz),
            ".zst" => Some(Compression::Zstd),
            ".gz" => Some(Compression::Gzip),
            _ => None,
        }
    }
}

/// The path a module enters the guest at: `…/tls.ko.xz` → `…/tls.ko`.
pub fn plain_path(rel: &str) -> &str {
    match rel.rsplit_once(".ko") {
        Some((stem, _)) => &rel[..stem.len() + 3],
        None => rel,
    }
}

/// The ELF image of module file `path`: read, and decompressed when its name
/// says it is compressed. The error names the file and the format.
pub fn read_plain(path: &Path) -> std::io::Result<Vec<u8>> {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let compression = Compression::of(&name).unwrap_or(Compression::None);
    let raw = std::fs::read(path)?;
    if compression == Compression::None {
        return Ok(raw);
    }
    decompress(compression, &raw).map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!("decompress {} ({compression:?}): {e}", path.display()),
        )
    })
}

/// `raw` decompressed as `compression` says.
pub fn decompress(compression: Compression, raw: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(raw.len() * 3);
    match compression {
        Compression::None => return Ok(raw.to_vec()),
        Compression::Xz => {
            liblzma::read::XzDecoder::new(raw).read_to_end(&mut out)?;
        }
        Compression::Zstd => {
            let mut decoder = ruzstd::decoding::StreamingDecoder::new(raw)
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
            decoder.read_to_end(&mut out)?;
        }
        Compression::Gzip => {
            flate2::read::GzDecoder::new(raw).read_to_end(&mut out)?;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    const ELF: &[u8] = b"\x7fELF module image, repeated repeated repeated repeated";

    #[test]
    fn names_and_paths() {
        assert_eq!(Compression::of("tls.ko"), Some(Compression::None));
        assert_eq!(Compression::of("tls.ko.xz"), Some(Compression::Xz));
        assert_eq!(Compression::of("smc.ko.zst"), Some(Compression::Zstd));
        assert_eq!(Compression::of("smc.ko.gz"), Some(Compression::Gzip));
        assert_eq!(Compression::of("modules.dep"), None);
        assert_eq!(Compression::of("x.ko.bz2"), None);
        assert_eq!(
            plain_path("kernel/net/tls/tls.ko.xz"),
            "kernel/net/tls/tls.ko"
        );
        assert_eq!(plain_path("kernel/net/tls/tls.ko"), "kernel/net/tls/tls.ko");
    }

    #[test]
    fn each_format_round_trips() {
        let mut xz = liblzma::write::XzEncoder::new(Vec::new(), 6);
        xz.write_all(ELF).unwrap();
        let xz = xz.finish().unwrap();
        assert_eq!(decompress(Compression::Xz, &xz).unwrap(), ELF);

        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(ELF).unwrap();
        let gz = gz.finish().unwrap();
        assert_eq!(decompress(Compression::Gzip, &gz).unwrap(), ELF);

        // ruzstd's encoder writes the "fastest" level; its frames are what
        // any zstd decoder reads.
        let zst =
            ruzstd::encoding::compress_to_vec(ELF, ruzstd::encoding::CompressionLevel::Fastest);
        assert_eq!(decompress(Compression::Zstd, &zst).unwrap(), ELF);

        assert_eq!(decompress(Compression::None, ELF).unwrap(), ELF);
    }

    #[test]
    fn a_damaged_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tls.ko.xz");
        std::fs::write(&path, b"not xz at all").unwrap();
        let err = read_plain(&path).unwrap_err().to_string();
        assert!(err.contains("tls.ko.xz") && err.contains("Xz"), "{err}");
    }
}
