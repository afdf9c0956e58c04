//! The settings reference page, `docs/settings.md`, rendered from the
//! settings table ([`SETTINGS`]) alone, so the page cannot drift from the
//! flags, study keys and JSON keys it describes. The idea is ripgrep's: its
//! man page is rendered from the same flag definitions that parse the command
//! line (crates/core/flags/doc/man.rs over crates/core/flags/defs.rs, printed
//! by `rg --generate man`). Here the hidden `stackbench __docs settings`
//! prints the page, and a test compares it with the checked-in file.

use std::fmt::Write;

use super::{RunSettings, SettingDef, SETTINGS};

/// The command that regenerates the page, from the repository's root.
pub const REGENERATE: &str = "cargo run -q -- __docs settings > docs/settings.md";

/// The whole page: a header, then one row per setting in table order.
pub fn settings_page() -> String {
    let defaults = RunSettings::default();
    let mut page = String::new();
    page.push_str(&header());
    page.push_str(
        "| flag | study key | JSON key | value | default | allowed | meaning |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for def in SETTINGS {
        page.push_str(&row(def, &defaults));
    }
    page
}

fn header() -> String {
    format!(
        "# Run settings\n\
         \n\
         Generated from the settings table in `crates/model/src/settings/mod.rs`:\n\
         edit the table, not this page, then regenerate it with\n\
         `{REGENERATE}`\n\
         (a test fails while the two differ).\n\
         \n\
         Every setting is a `run` flag, a key of a study file (top level, a\n\
         variant, or a `[sweep]` dimension) and a key of the stored `settings`\n\
         object of a result, whose name carries the unit. A switch is given as\n\
         `--flag` or `--flag=false`; `default` resets an optional setting to the\n\
         value the run resolves (the *default* column; *not set*: nothing is\n\
         applied unless given). Sizes are binary (`kB` = `KiB` = 1024 B, `GB` =\n\
         `GiB` = 1024³ B). The same text gets the same error message from a\n\
         flag, a study key or a sweep.\n\
         \n"
    )
}

fn row(def: &SettingDef, defaults: &RunSettings) -> String {
    let flags: Vec<String> = std::iter::once(def.flag())
        .chain(def.aliases().map(|a| format!("--{a}")))
        .map(|f| format!("`{f}`"))
        .collect();
    let value = if def.switch {
        format!("`{}` (switch)", def.value_name)
    } else {
        format!("`{}`", def.value_name)
    };
    let (default, help) = default_and_help(def, defaults);
    let mut line = String::new();
    write!(
        line,
        "| {} | `{}` | `{}` | {value} | {} | {} | {} |",
        flags.join(", "),
        def.name,
        def.json,
        cell(&default),
        cell(&allowed(def)),
        cell(&help),
    )
    .expect("writing to a String cannot fail");
    line.push('\n');
    line
}

/// The default column and the help without the default it may carry: a
/// setting resolved at run time (`None` in the table) says its default in
/// its help as `[default: …]` (the table's rule), which moves to the column.
fn default_and_help(def: &SettingDef, defaults: &RunSettings) -> (String, String) {
    let help = def.help.trim().to_string();
    let text = defaults.text_of(def.name).unwrap_or_default();
    if text != "default" {
        return (format!("`{text}`"), help);
    }
    match split_default(&help) {
        Some((default, rest)) => (default, rest),
        None => ("not set".to_string(), help),
    }
}

/// `("X", help without " [default: X]")`, when the help has that bracket.
fn split_default(help: &str) -> Option<(String, String)> {
    const OPEN: &str = "[default: ";
    let start = help.find(OPEN)?;
    let end = start + help[start..].find(']')?;
    let default = help[start + OPEN.len()..end].to_string();
    let rest = format!("{}{}", help[..start].trim_end(), &help[end + 1..]);
    Some((default, rest))
}

/// The allowed column: a closed set's spellings, or the inclusive range.
fn allowed(def: &SettingDef) -> String {
    if !def.allowed.is_empty() && !def.switch {
        let spellings: Vec<String> = def.allowed.iter().map(|a| format!("`{a}`")).collect();
        return spellings.join(", ");
    }
    match def.range {
        Some((lo, hi)) => format!("`{lo}` to `{hi}`"),
        None => String::new(),
    }
}

/// Text safe inside a Markdown table cell: `|` would end the cell and `<…>`
/// would read as an HTML tag.
fn cell(text: &str) -> String {
    text.replace('|', "\\|")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_row_per_setting_in_table_order() {
        let page = settings_page();
        let rows: Vec<&str> = page.lines().filter(|l| l.starts_with("| `--")).collect();
        assert_eq!(rows.len(), SETTINGS.len());
        for (row, def) in rows.iter().zip(SETTINGS) {
            assert!(row.starts_with(&format!("| `{}`", def.flag())), "{row}");
            assert!(row.contains(&format!("`{}`", def.json)), "{row}");
        }
    }

    #[test]
    fn aliases_ranges_and_defaults_are_shown() {
        let page = settings_page();
        let row = |name: &str| {
            let flag = format!("| `--{}`", name.replace('_', "-"));
            page.lines()
                .find(|l| l.starts_with(&flag))
                .unwrap_or_else(|| panic!("no row for {name}"))
                .to_string()
        };
        assert!(row("lab_from").contains("`--lab-from`, `--from`"));
        assert!(row("threads").contains("`1` to `1024`"));
        assert!(row("crr_close").contains("`server`, `client`, `abort`"));
        assert!(
            row("guest_memory").contains("| `2GB` |"),
            "{}",
            row("guest_memory")
        );
        // A run-time default moves from the help to the default column.
        let threads = row("threads");
        assert!(threads.contains("| one per driver CPU |"), "{threads}");
        assert!(!threads.contains("[default:"), "{threads}");
        assert!(row("transactions").contains("| not set |"));
        assert!(row("priority").contains("CS&lt;L&gt;"));
    }

    #[test]
    fn the_default_bracket_leaves_the_help_readable() {
        let (d, rest) =
            split_default("TCP_NODELAY both sides [default: on for tls (as nginx)]. Stored.")
                .unwrap();
        assert_eq!(d, "on for tls (as nginx)");
        assert_eq!(rest, "TCP_NODELAY both sides. Stored.");
        assert_eq!(split_default("no bracket"), None);
    }
}
