//! Kubernetes object names: the DNS label rules the API server applies
//! (RFC 1123 labels for namespaces, RFC 1035 labels for Services), checked
//! before anything is written so that a name the cluster would refuse is one
//! line here, naming the rule it breaks, instead of a `kubectl apply` error
//! after some objects were already created.

/// Longest DNS label (RFC 1123 and RFC 1035 alike).
pub const MAX_LABEL: usize = 63;

/// Which labels a name must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LabelRule {
    /// RFC 1123: lowercase letters, digits and '-', starting and ending with
    /// a letter or digit (namespaces, Jobs, ConfigMaps, pod hostnames).
    Rfc1123,
    /// RFC 1035: as RFC 1123, but starting with a letter (Service names,
    /// since a Service's name becomes a DNS name of its own).
    Rfc1035,
}

impl LabelRule {
    fn name(self) -> &'static str {
        match self {
            LabelRule::Rfc1123 => "an RFC 1123 DNS label",
            LabelRule::Rfc1035 => "an RFC 1035 DNS label",
        }
    }
}

/// Checks `text` against `rule` with at most `max_len` characters (at most
/// [`MAX_LABEL`]: less where a suffix is appended to it). The error names the
/// first rule broken, e.g. "must start with a lowercase letter".
pub fn check_label(text: &str, rule: LabelRule, max_len: usize) -> Result<(), String> {
    let what = rule.name();
    if text.is_empty() {
        return Err(format!("is empty: {what} has 1 to {max_len} characters"));
    }
    if let Some((at, c)) = text
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
    {
        return Err(format!(
            "holds '{c}' at position {}: {what} holds only lowercase letters, digits and '-'",
            at + 1
        ));
    }
    let first = text.as_bytes()[0];
    match rule {
        LabelRule::Rfc1035 if !first.is_ascii_lowercase() => {
            return Err(format!("must start with a lowercase letter ({what})"));
        }
        LabelRule::Rfc1123 if first == b'-' => {
            return Err(format!("must start with a letter or digit ({what})"));
        }
        _ => {}
    }
    if text.ends_with('-') {
        return Err(format!("must end with a letter or digit ({what})"));
    }
    if text.len() > max_len {
        return Err(format!(
            "has {} characters: at most {max_len} here ({what} has at most {MAX_LABEL})",
            text.len()
        ));
    }
    Ok(())
}

/// Longest DNS subdomain (most object names: ConfigMaps, claims).
pub const MAX_SUBDOMAIN: usize = 253;

/// Checks an RFC 1123 subdomain: RFC 1123 labels joined by '.', at most
/// [`MAX_SUBDOMAIN`] characters (the rule for PersistentVolumeClaim names).
pub fn check_subdomain(text: &str) -> Result<(), String> {
    if text.len() > MAX_SUBDOMAIN {
        return Err(format!(
            "has {} characters: an RFC 1123 DNS subdomain has at most {MAX_SUBDOMAIN}",
            text.len()
        ));
    }
    for part in text.split('.') {
        check_label(part, LabelRule::Rfc1123, MAX_LABEL).map_err(|e| {
            format!("part '{part}' {e} (an RFC 1123 subdomain is labels joined by '.')")
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_rule_is_named_when_it_fails() {
        let rfc1035 = |t: &str| check_label(t, LabelRule::Rfc1035, MAX_LABEL);
        let rfc1123 = |t: &str| check_label(t, LabelRule::Rfc1123, MAX_LABEL);
        assert_eq!(rfc1035("tn3270-capacity"), Ok(()));
        assert_eq!(rfc1123("0team"), Ok(()));
        assert!(rfc1035("0team")
            .unwrap_err()
            .contains("start with a lowercase letter"));
        assert!(rfc1123("-team")
            .unwrap_err()
            .contains("start with a letter or digit"));
        assert!(rfc1123("team-")
            .unwrap_err()
            .contains("end with a letter or digit"));
        let e = rfc1123("My_Study").unwrap_err();
        assert!(e.contains("'M' at position 1"), "{e}");
        assert!(rfc1123("a_b").unwrap_err().contains("'_' at position 2"));
        assert!(rfc1123("").unwrap_err().contains("is empty"));
        assert_eq!(rfc1123(&"a".repeat(63)), Ok(()));
        let e = rfc1123(&"a".repeat(64)).unwrap_err();
        assert!(e.contains("has 64 characters: at most 63"), "{e}");
        let e = check_label("abcdef", LabelRule::Rfc1035, 5).unwrap_err();
        assert!(e.contains("at most 5 here"), "{e}");
    }

    #[test]
    fn a_subdomain_is_labels_joined_by_dots() {
        assert_eq!(check_subdomain("results.team-a"), Ok(()));
        let e = check_subdomain("results..a").unwrap_err();
        assert!(e.contains("part '' is empty"), "{e}");
        assert!(check_subdomain(&"a".repeat(254)).is_err());
    }
}
