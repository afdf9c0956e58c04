//! The kernel a run is measured on, and the guest that carries it: on Linux
//! the network stack is the kernel, so comparing stack releases means running
//! the same step on two kernels. `host` (the default) is this machine's
//! kernel; anything else boots a guest VM with that kernel and runs the whole
//! step (driver, responder, and a lab's namespaces) inside it (the `guest`
//! crate). Guests under TCG emulation give functional results only.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::value::SettingValue;

/// Which kernel runs the step.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum KernelSpec {
    /// This machine's kernel: no guest.
    #[default]
    Host,
    /// A Debian kernel package, fetched with `apt-get download` and unpacked
    /// into stackbench's cache (never installed). A `*` makes it a pattern:
    /// the newest package the apt index lists that matches, chosen at run time.
    Package(String),
    /// A vmlinuz inside an unpacked kernel package tree
    /// (`…/boot/vmlinuz-REL` with `…/lib/modules/REL`).
    Path(String),
}

impl KernelSpec {
    /// True when the step runs in a guest.
    pub fn is_guest(&self) -> bool {
        !matches!(self, KernelSpec::Host)
    }
}

impl SettingValue for KernelSpec {
    const VALUE_NAME: &'static str = "KERNEL";
    fn parse(text: &str) -> Result<Self, String> {
        let t = text.trim();
        if t == "host" {
            Ok(KernelSpec::Host)
        } else if t.contains('/') {
            Ok(KernelSpec::Path(t.to_string()))
        } else if t.starts_with("linux-image-")
            && t.len() > "linux-image-".len()
            && t.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-+.~*".contains(c))
        {
            Ok(KernelSpec::Package(t.to_string()))
        } else {
            Err(format!(
                "unknown kernel '{t}': use host, a Debian kernel package \
                 (linux-image-…; `apt-cache search linux-image` lists them; `*` in it picks \
                 the newest match) or a path to a vmlinuz"
            ))
        }
    }
    fn text(&self) -> String {
        match self {
            KernelSpec::Host => "host".to_string(),
            KernelSpec::Package(p) | KernelSpec::Path(p) => p.clone(),
        }
    }
}

impl Serialize for KernelSpec {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text())
    }
}

impl<'de> Deserialize<'de> for KernelSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        KernelSpec::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// How a guest's CPU is provided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GuestAccel {
    /// KVM when a probe guest boots with it, else TCG (with a message).
    #[default]
    Auto,
    /// Hardware virtualisation.
    Kvm,
    /// QEMU's emulator: results are functional only (`emulated`).
    Tcg,
}

impl GuestAccel {
    pub fn name(self) -> &'static str {
        match self {
            GuestAccel::Auto => "auto",
            GuestAccel::Kvm => "kvm",
            GuestAccel::Tcg => "tcg",
        }
    }
}

impl SettingValue for GuestAccel {
    const VALUE_NAME: &'static str = "ACCEL";
    const ALLOWED: &'static [&'static str] = &["auto", "kvm", "tcg"];
    fn parse(text: &str) -> Result<Self, String> {
        match text.trim() {
            "auto" => Ok(GuestAccel::Auto),
            "kvm" => Ok(GuestAccel::Kvm),
            "tcg" => Ok(GuestAccel::Tcg),
            _ => Err("unknown guest accelerator: use auto, kvm or tcg".to_string()),
        }
    }
    fn text(&self) -> String {
        self.name().to_string()
    }
}

impl Serialize for GuestAccel {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for GuestAccel {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        GuestAccel::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_spellings_round_trip() {
        for (text, want) in [
            ("host", KernelSpec::Host),
            (
                "linux-image-6.1.0-48-cloud-amd64-unsigned",
                KernelSpec::Package("linux-image-6.1.0-48-cloud-amd64-unsigned".into()),
            ),
            (
                "linux-image-6.12.*-cloud-amd64-unsigned",
                KernelSpec::Package("linux-image-6.12.*-cloud-amd64-unsigned".into()),
            ),
            (
                "/k/boot/vmlinuz-6.1.0-48-cloud-amd64",
                KernelSpec::Path("/k/boot/vmlinuz-6.1.0-48-cloud-amd64".into()),
            ),
        ] {
            let k = KernelSpec::parse(text).unwrap();
            assert_eq!(k, want);
            assert_eq!(k.text(), text);
            assert_eq!(k.is_guest(), text != "host");
        }
        for bad in ["", "6.1", "linux-image-", "linux-image-x;rm"] {
            assert!(KernelSpec::parse(bad)
                .unwrap_err()
                .contains("apt-cache search"));
        }
    }

    #[test]
    fn accel_spellings() {
        for a in [GuestAccel::Auto, GuestAccel::Kvm, GuestAccel::Tcg] {
            assert_eq!(GuestAccel::parse(a.name()).unwrap(), a);
        }
        assert!(GuestAccel::parse("hvf")
            .unwrap_err()
            .contains("auto, kvm or tcg"));
    }
}
