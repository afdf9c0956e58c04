//! Which lab file a lab was brought up from. A lab's kernel objects are
//! named by the lab's `name` alone, so a second file with the same name
//! used to reconcile the first file's lab into its own (rates and addresses
//! rewritten, exit 0). [`up_from`] refuses that, naming the owning file.
//!
//! The owner is recorded where the lab's state is: in the kernel, as the
//! alias (`IFLA_IFALIAS`, what `ip link set lo alias …` sets) of the
//! loopback of each of the lab's namespaces. It therefore lives exactly as
//! long as the lab (`lab down`, or deleting the namespaces by hand, removes
//! it with them; no file outside can go stale), and a person sees it with
//! `ip netns exec sb-<lab>-<host> ip link show lo`. A lab made before owners
//! were recorded has no alias and is taken over by the next `up`.

use std::path::Path;

use crate::error::{LabError, Result};
use crate::nl::{netlink, nl_error};
use crate::spec::{namespace_prefix, Lab};
use crate::up::{up, UpReport};
use crate::{netns, rtnl};

/// What the alias starts with, so an alias a person set is not taken for an owner.
const TAG: &str = "stackbench lab file ";
/// Longest alias the kernel keeps (IFALIASZ - 1).
const MAX_ALIAS: usize = 255;

/// The alias recorded for `file`: its canonical path (`./a.toml` and
/// `/work/a.toml` are one owner), or its last bytes when the path is too
/// long for an alias (file names differ at their end).
fn alias_for(file: &Path) -> String {
    let path = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
    let path = path.display().to_string();
    let room = MAX_ALIAS - TAG.len() - "…".len();
    if TAG.len() + path.len() <= MAX_ALIAS {
        return format!("{TAG}{path}");
    }
    let mut cut = path.len() - room;
    while !path.is_char_boundary(cut) {
        cut += 1;
    }
    format!("{TAG}…{}", &path[cut..])
}

/// The file lab `lab` was brought up from, as recorded; `None` when the
/// lab is down or was made without a record.
pub fn owner(lab: &str) -> Result<Option<String>> {
    for ns in netns::list(&namespace_prefix(lab))? {
        if !netns::exists(&ns) {
            continue;
        }
        let alias = netns::run_in(&ns, || {
            let mut nl = netlink()?;
            let lo =
                rtnl::link(&mut nl, "lo").map_err(|e| nl_error(format!("{ns}: read lo"), e))?;
            Ok(lo.and_then(|l| l.alias))
        })?;
        if let Some(path) = alias.as_deref().and_then(|a| a.strip_prefix(TAG)) {
            return Ok(Some(path.to_string()));
        }
    }
    Ok(None)
}

/// Refuses to bring lab `lab` up from `file` when another file owns it.
pub fn check(lab: &Lab, file: &Path) -> Result<()> {
    let ours = alias_for(file);
    match owner(&lab.name)? {
        Some(owner) if ours.strip_prefix(TAG) != Some(owner.as_str()) => Err(LabError::Owned {
            lab: lab.name.clone(),
            owner,
            file: file.display().to_string(),
        }),
        _ => Ok(()),
    }
}

/// Records `file` as the owner of lab `lab` (which is up).
pub fn record(lab: &Lab, file: &Path) -> Result<()> {
    let alias = alias_for(file);
    for ns in netns::list(&namespace_prefix(&lab.name))? {
        netns::run_in(&ns, || {
            let mut nl = netlink()?;
            let action = || format!("{ns}: record the lab file as lo's alias");
            let lo = rtnl::link(&mut nl, "lo")
                .map_err(|e| nl_error(action(), e))?
                .ok_or_else(|| {
                    LabError::os(action(), std::io::Error::from_raw_os_error(libc::ENODEV))
                })?;
            rtnl::set_alias(&mut nl, lo.index, &alias).map_err(|e| nl_error(action(), e))
        })?;
    }
    Ok(())
}

/// [`up()`] for the lab read from `file`: refused when another file owns a
/// lab of that name (see the module doc), recorded as the owner after.
pub fn up_from(lab: &Lab, file: &Path) -> Result<UpReport> {
    check(lab, file)?;
    let report = up(lab)?;
    record(lab, file)?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_paths_keep_their_end_within_the_kernel_limit() {
        let short = alias_for(Path::new("/nonexistent/lab.toml"));
        assert_eq!(short, "stackbench lab file /nonexistent/lab.toml");
        let long = format!("/nonexistent/{}/é-lab.toml", "d".repeat(300));
        let alias = alias_for(Path::new(&long));
        assert!(alias.len() <= MAX_ALIAS, "{}", alias.len());
        assert!(alias.starts_with("stackbench lab file …d"), "{alias}");
        assert!(alias.ends_with("/é-lab.toml"), "{alias}");
    }
}
