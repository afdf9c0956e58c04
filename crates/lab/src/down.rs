//! `lab down`: removes everything of a lab, found by its name prefix rather
//! than by the file's contents, so what a killed `up` or an older version
//! of the file left is removed too. Deleting a namespace takes its veth ends
//! (and so their peers) and their qdiscs with it; lab-named interfaces in
//! the caller's namespace are deleted explicitly.

use crate::error::Result;
use crate::layout::is_lab_ifname;
use crate::nl::nl_error;
use crate::spec::namespace_prefix;
use crate::{netns, rtnl};

/// Removes lab `lab`'s namespaces and interfaces; returns what it removed
/// (an empty list when the lab was down already).
pub fn down(lab: &str) -> Result<Vec<String>> {
    let mut removed = remove_lab_links(lab, |_| false)?;
    for name in netns::list(&namespace_prefix(lab))? {
        netns::delete(&name)?;
        removed.push(name);
    }
    Ok(removed)
}

/// Deletes the veth interfaces of lab `lab` (by name, see
/// [`is_lab_ifname`]) in the calling thread's namespace, except those `keep`
/// accepts; returns their names.
pub(crate) fn remove_lab_links(lab: &str, keep: impl Fn(&str) -> bool) -> Result<Vec<String>> {
    let mut nl = crate::nl::netlink()?;
    let links = rtnl::links(&mut nl).map_err(|e| nl_error("list links", e))?;
    let mut removed = Vec::new();
    let ours = |l: &&rtnl::LinkInfo| {
        l.kind.as_deref() == Some("veth") && is_lab_ifname(lab, &l.name) && !keep(&l.name)
    };
    for link in links.iter().filter(ours) {
        match rtnl::delete_link(&mut nl, link.index) {
            Err(e) if e.errno() == Some(libc::ENODEV) => {} // went with its peer
            other => other.map_err(|e| nl_error(format!("delete {}", link.name), e))?,
        }
        removed.push(link.name.clone());
    }
    Ok(removed)
}
