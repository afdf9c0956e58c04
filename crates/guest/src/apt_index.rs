//! Kernel package patterns: `kernel = "linux-image-6.12.*-cloud-amd64-unsigned"`
//! names the newest package the apt index lists that matches, chosen when the
//! run starts. Debian's archive drops old kernel ABIs within weeks, so a
//! study pinned to one ABI stops working; a pattern keeps comparing "the
//! newest 6.1" with "the newest 6.12". The package actually booted is stored
//! in the run's guest environment beside the pattern (the `kernel` setting).

use std::cmp::Ordering;
use std::process::Command;

use crate::error::GuestError;

/// Whether `spec` is a pattern rather than one package name.
pub fn is_pattern(spec: &str) -> bool {
    spec.contains('*')
}

/// The newest package in the apt index matching `pattern` (`*` matches any
/// run of characters).
pub fn newest_matching(pattern: &str) -> Result<String, GuestError> {
    let err = |detail: String| GuestError::KernelPackage {
        package: pattern.to_string(),
        detail,
    };
    let literal = pattern.replace('*', "");
    let ok = literal
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "+-.".contains(c));
    if !ok || literal.is_empty() {
        return Err(err(
            "not a Debian package name pattern (lower-case letters, digits, + - . and *)".into(),
        ));
    }
    let out = Command::new("apt-cache")
        .args(["search", "--names-only", &to_regex(pattern)])
        .output()
        .map_err(|_| GuestError::MissingTool {
            tool: "apt-cache",
            package: "apt",
        })?;
    let text = String::from_utf8_lossy(&out.stdout);
    let names = text.lines().filter_map(|l| l.split_whitespace().next());
    newest(pattern, names).ok_or_else(|| {
        err(
            "no package in the apt index matches (run `apt-get update`, or widen the pattern)"
                .into(),
        )
    })
}

/// The newest of `names` that match `pattern`, by Debian-style version order
/// of the numbers in the name (`6.12.117` after `6.12.99`, ABI 55 after 9).
fn newest<'a>(pattern: &str, names: impl Iterator<Item = &'a str>) -> Option<String> {
    names
        .filter(|n| glob_match(pattern, n))
        .max_by(|a, b| version_cmp(a, b))
        .map(str::to_string)
}

/// `pattern` as an anchored POSIX regex for `apt-cache search`.
fn to_regex(pattern: &str) -> String {
    let mut re = String::from("^");
    for c in pattern.chars() {
        match c {
            '*' => re.push_str(".*"),
            '.' | '+' => {
                re.push('\\');
                re.push(c);
            }
            c => re.push(c),
        }
    }
    re.push('$');
    re
}

/// Shell-style match where `*` matches any run of characters.
fn glob_match(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if parts.len() == 1 {
        return pattern == name;
    }
    if !name.starts_with(first) || !name[first.len()..].ends_with(last) {
        return false;
    }
    let mut rest = &name[first.len()..name.len() - last.len()];
    for middle in &parts[1..parts.len() - 1] {
        match rest.find(middle) {
            Some(i) => rest = &rest[i + middle.len()..],
            None => return false,
        }
    }
    true
}

/// Compares names run by run: digit runs as numbers, other runs as text.
fn version_cmp(a: &str, b: &str) -> Ordering {
    let (ra, rb) = (runs(a), runs(b));
    for (x, y) in ra.iter().zip(&rb) {
        let o = match (x.parse::<u64>(), y.parse::<u64>()) {
            (Ok(m), Ok(n)) => m.cmp(&n),
            _ => x.cmp(y),
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    ra.len().cmp(&rb.len())
}

fn runs(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = s.as_bytes();
    for i in 1..=bytes.len() {
        if i == bytes.len() || bytes[i].is_ascii_digit() != bytes[i - 1].is_ascii_digit() {
            out.push(&s[start..i]);
            start = i;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const INDEX: [&str; 7] = [
        "linux-image-6.1.0-9-cloud-amd64-unsigned",
        "linux-image-6.1.0-55-cloud-amd64-unsigned",
        "linux-image-6.1.0-50-cloud-amd64-unsigned",
        "linux-image-6.1.0-55-amd64-unsigned",
        "linux-image-6.12.99+deb12-cloud-amd64-unsigned",
        "linux-image-6.12.117+deb12-cloud-amd64-unsigned",
        "linux-image-6.12.117+deb12-rt-amd64-unsigned",
    ];

    #[test]
    fn the_newest_match_is_by_number_not_by_text() {
        let pick = |p| newest(p, INDEX.into_iter());
        assert_eq!(
            pick("linux-image-6.1.0-*-cloud-amd64-unsigned").as_deref(),
            Some("linux-image-6.1.0-55-cloud-amd64-unsigned")
        );
        assert_eq!(
            pick("linux-image-6.12.*-cloud-amd64-unsigned").as_deref(),
            Some("linux-image-6.12.117+deb12-cloud-amd64-unsigned")
        );
        // "6.1.*" must not take a 6.12 package: the dot is literal.
        assert_eq!(
            pick("linux-image-6.1.0-*-amd64-unsigned").as_deref(),
            Some("linux-image-6.1.0-55-cloud-amd64-unsigned")
        );
        assert_eq!(pick("linux-image-7.*-cloud-amd64-unsigned"), None);
    }

    #[test]
    fn globs_and_regexes() {
        assert!(glob_match("a*c", "abbc"));
        assert!(glob_match("a*b*c", "axbyc"));
        assert!(!glob_match("a*b*c", "axyc"));
        assert!(!glob_match("a*c", "abcd"));
        assert_eq!(to_regex("linux-6.1*+x"), "^linux-6\\.1.*\\+x$");
    }

    #[test]
    fn a_bad_pattern_is_refused_without_searching() {
        let err = newest_matching("Linux*;rm").unwrap_err().to_string();
        assert!(err.contains("not a Debian package name pattern"), "{err}");
        assert!(!err.contains('\n'));
    }
}
