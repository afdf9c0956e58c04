//! modules.dep and modules.alias for the guest, generated ON THE HOST from
//! each module's `.modinfo` ELF section: running busybox `depmod` in the guest
//! costs some 7 s under TCG, reading 1000 small sections here a fraction of that.
//!
//! `.modinfo` is a run of NUL-terminated `key=value` strings (the kernel's
//! include/linux/moduleparam.h `__MODULE_INFO`); `depends=a,b` names the
//! modules whose symbols this one uses, `alias=PATTERN` the names
//! `request_module` may ask for (`tcp-ulp-tls`, `xfrm-type-2-50`, …).
//! The files written follow busybox modutils (modprobe.c, depmod.c):
//! modules.dep holds, per module, the FULL list of dependencies (busybox
//! expects the transitive closure), ordered so that loading from last to
//! first loads every module after its own dependencies; modules.alias holds
//! `alias PATTERN MODNAME` lines.

use std::collections::{BTreeMap, BTreeSet};

use object::{Object, ObjectSection};

/// What one module's `.modinfo` says.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ModInfo {
    /// Module names (underscored) this module depends on.
    pub depends: Vec<String>,
    /// `request_module` patterns (fnmatch globs) this module answers.
    pub aliases: Vec<String>,
}

/// Parses the bytes of a `.modinfo` section.
pub fn parse_modinfo(section: &[u8]) -> ModInfo {
    let mut info = ModInfo::default();
    for entry in section.split(|&b| b == 0) {
        let text = String::from_utf8_lossy(entry);
        if let Some(deps) = text.strip_prefix("depends=") {
            let names = deps.split(',').filter(|d| !d.is_empty());
            info.depends.extend(names.map(module_name));
        } else if let Some(alias) = text.strip_prefix("alias=") {
            info.aliases.push(alias.to_string());
        }
    }
    info
}

/// The `.modinfo` of the ELF module file `bytes` (empty when it has none).
pub fn modinfo_of_elf(bytes: &[u8]) -> Result<ModInfo, object::Error> {
    let file = object::File::parse(bytes)?;
    match file.section_by_name(".modinfo") {
        Some(section) => Ok(parse_modinfo(section.data()?)),
        None => Ok(ModInfo::default()),
    }
}

/// The module name of `path` or of a name in `depends=`: the file stem with
/// `-` as `_` (the kernel treats the two alike in module names).
pub fn module_name(path_or_name: &str) -> String {
    let base = path_or_name.rsplit('/').next().unwrap_or(path_or_name);
    let stem = base.split(".ko").next().unwrap_or(base);
    stem.replace('-', "_")
}

/// The text of modules.dep and modules.alias for `modules`: (path relative
/// to lib/modules/REL, its modinfo), e.g. `("kernel/net/tls/tls.ko", …)`.
/// Dependencies missing from `modules` (built in, or in a skipped directory)
/// are left out: modprobe then fails on the module that needs them, as it would
/// on a machine without them.
pub fn dep_and_alias_files(modules: &[(String, ModInfo)]) -> (String, String) {
    let by_name: BTreeMap<String, usize> = modules
        .iter()
        .enumerate()
        .map(|(i, (path, _))| (module_name(path), i))
        .collect();
    let mut dep = String::new();
    let mut alias = String::new();
    for (i, (path, info)) in modules.iter().enumerate() {
        let mut order = Vec::new();
        let mut seen = BTreeSet::from([i]);
        for d in &info.depends {
            post_order(d, modules, &by_name, &mut seen, &mut order);
        }
        // Post-order lists dependencies before their users; busybox loads the
        // line from last to first, so the line wants users first.
        order.reverse();
        let deps: Vec<&str> = order.iter().map(|&j| modules[j].0.as_str()).collect();
        dep.push_str(&format!("{path}:"));
        for d in deps {
            dep.push(' ');
            dep.push_str(d);
        }
        dep.push('\n');
        let name = module_name(path);
        for a in &info.aliases {
            alias.push_str(&format!("alias {a} {name}\n"));
        }
    }
    (dep, alias)
}

fn post_order(
    name: &str,
    modules: &[(String, ModInfo)],
    by_name: &BTreeMap<String, usize>,
    seen: &mut BTreeSet<usize>,
    order: &mut Vec<usize>,
) {
    let Some(&j) = by_name.get(name) else { return };
    if !seen.insert(j) {
        return;
    }
    for d in &modules[j].1.depends {
        post_order(d, modules, by_name, seen, order);
    }
    order.push(j);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `.modinfo` section of Debian 6.1's net/tls/tls.ko, abridged.
    const TLS_MODINFO: &[u8] = b"alias=tcp-ulp-tls\0license=Dual BSD/GPL\0\
        description=Transport Layer Security Support\0depends=\0retpoline=Y\0\
        intree=Y\0name=tls\0vermagic=6.1.0-48-cloud-amd64 SMP preempt mod_unload modversions \0";
    const ESP4_MODINFO: &[u8] =
        b"alias=xfrm-type-2-50\0license=GPL\0depends=xfrm_algo,af-key\0name=esp4\0";

    #[test]
    fn parses_depends_and_aliases() {
        let tls = parse_modinfo(TLS_MODINFO);
        assert_eq!(tls.depends, Vec::<String>::new());
        assert_eq!(tls.aliases, vec!["tcp-ulp-tls"]);
        let esp = parse_modinfo(ESP4_MODINFO);
        assert_eq!(esp.depends, vec!["xfrm_algo", "af_key"]);
        assert_eq!(esp.aliases, vec!["xfrm-type-2-50"]);
    }

    #[test]
    fn module_names_from_paths() {
        assert_eq!(module_name("kernel/net/key/af-key.ko"), "af_key");
        assert_eq!(module_name("kernel/net/tls/tls.ko.xz"), "tls");
        assert_eq!(module_name("nf-nat"), "nf_nat");
    }

    fn module(path: &str, deps: &[&str], aliases: &[&str]) -> (String, ModInfo) {
        let info = ModInfo {
            depends: deps.iter().map(|d| d.to_string()).collect(),
            aliases: aliases.iter().map(|a| a.to_string()).collect(),
        };
        (path.to_string(), info)
    }

    #[test]
    fn dep_lines_hold_the_closure_users_first() {
        // esp4 → xfrm_algo → crypto_null; esp4 → af_key → xfrm_algo; missing is skipped.
        let modules = vec![
            module(
                "kernel/net/ipv4/esp4.ko",
                &["af_key", "xfrm_algo", "missing"],
                &["xfrm-type-2-50"],
            ),
            module("kernel/net/key/af_key.ko", &["xfrm_algo"], &["net-pf-15"]),
            module("kernel/net/xfrm/xfrm_algo.ko", &["crypto_null"], &[]),
            module("kernel/crypto/crypto_null.ko", &[], &[]),
        ];
        let (dep, alias) = dep_and_alias_files(&modules);
        let lines: Vec<&str> = dep.lines().collect();
        assert_eq!(
            lines[0],
            "kernel/net/ipv4/esp4.ko: kernel/net/key/af_key.ko kernel/net/xfrm/xfrm_algo.ko kernel/crypto/crypto_null.ko"
        );
        assert_eq!(
            lines[1],
            "kernel/net/key/af_key.ko: kernel/net/xfrm/xfrm_algo.ko kernel/crypto/crypto_null.ko"
        );
        assert_eq!(lines[3], "kernel/crypto/crypto_null.ko:");
        assert_eq!(alias, "alias xfrm-type-2-50 esp4\nalias net-pf-15 af_key\n");
    }

    #[test]
    fn dependency_cycles_end() {
        let modules = vec![module("a.ko", &["b"], &[]), module("b.ko", &["a"], &[])];
        let (dep, _) = dep_and_alias_files(&modules);
        assert_eq!(dep, "a.ko: b.ko\nb.ko: a.ko\n");
    }

    #[test]
    fn non_elf_bytes_are_an_error() {
        assert!(modinfo_of_elf(b"not an elf").is_err());
    }
}
