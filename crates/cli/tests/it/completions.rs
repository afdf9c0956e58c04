//! `stackbench completions SHELL` and `stackbench man DIR`: every run setting
//! is in the bash and zsh scripts (with its allowed values) and in the run
//! man page; the scripts load in the real shells and complete a flag and a
//! setting value; `man -l` renders every page; bad input is one line, exit 2.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use stackbench_model::settings::SETTINGS;
use stackbench_testkit::{skip, Tier};

use crate::common::{output_ok, stackbench, wait_bounded};

/// The completion script for `shell`.
fn script(shell: &str) -> String {
    let out = output_ok(stackbench().args(["completions", shell]));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.is_empty(), "empty {shell} script");
    text
}

/// Runs `cmd` (a shell driving completion), bounded, and returns its stdout.
fn shell_output(cmd: &mut Command) -> String {
    let child = cmd
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let out = wait_bounded(child, Duration::from_secs(60));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{cmd:?} failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn completion_scripts_name_every_setting_and_its_values() {
    let bash = script("bash");
    let zsh = script("zsh");
    for def in SETTINGS {
        let flag = def.flag();
        assert!(bash.contains(&format!(" {flag} ")), "bash lacks {flag}");
        assert!(zsh.contains(&format!("'{flag}=[")), "zsh lacks {flag}");
        if def.allowed.is_empty() || def.switch {
            continue;
        }
        let words = def.allowed.join(" ");
        assert!(
            bash.contains(&format!(
                "{flag})\n                    COMPREPLY=($(compgen -W \"{words}\""
            )),
            "bash does not complete {flag} with {words}"
        );
        assert!(
            zsh.contains(&format!(":{}:({words})'", def.value_name)),
            "zsh does not complete {flag} with {words}"
        );
    }
    // fish names long flags without their dashes.
    for (shell, protocol) in [
        ("fish", "-l protocol"),
        ("elvish", "--protocol"),
        ("powershell", "--protocol"),
    ] {
        assert!(script(shell).contains(protocol), "{shell} lacks {protocol}");
    }
}

/// Sources the bash script in a bash without rc files, finds the function
/// `complete -p` registered for stackbench, and calls it as readline would
/// for the cursor at the end of `words`; prints COMPREPLY one per line.
const BASH_DRIVER: &str = r#"
source "$1"; shift
spec=$(complete -p stackbench) || exit 3
fn=${spec#*-F }; fn=${fn%% *}
COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 ))
COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
"$fn" stackbench "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}" 2>/dev/null
printf '%s\n' "${COMPREPLY[@]}"
"#;

fn bash_completes(script: &Path, words: &[&str]) -> Vec<String> {
    let out = shell_output(
        Command::new("bash")
            .args(["--norc", "--noprofile", "-c", BASH_DRIVER, "bash"])
            .arg(script)
            .args(words),
    );
    out.lines().map(str::to_string).collect()
}

#[test]
fn bash_completes_a_flag_and_a_setting_value() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stackbench.bash");
    std::fs::write(&path, script("bash")).unwrap();
    let flags = bash_completes(&path, &["stackbench", "run", "--proto"]);
    assert_eq!(flags, ["--protocol"]);
    let values = bash_completes(&path, &["stackbench", "run", "--protocol", ""]);
    assert_eq!(values, ["raw", "http1", "tn3270", "amqp", "ftp", "h2"]);
    let values = bash_completes(
        &path,
        &["stackbench", "study", "x.toml", "--transport", "m"],
    );
    assert_eq!(values, ["mptcp"]);
    let nested = bash_completes(&path, &["stackbench", "results", "l"]);
    assert_eq!(nested, ["list"]);
}

/// Starts an interactive zsh on a pseudo-terminal (zpty), loads completion
/// with compinit from `$1` (a directory holding `_stackbench`), types `$2`
/// and TAB, and prints each candidate zsh's completion offers (compadd
/// wrapped) as `HIT:word`, until the completion has finished. The markers
/// are spelled split in the commands typed, so the terminal's echo of a
/// command never matches one; a candidate can follow the echo on its line.
const ZSH_DRIVER: &str = r#"
zmodload zsh/zpty || exit 3
zpty z zsh -f -i
zpty -w z "PROMPT=''; fpath=($1 \$fpath); autoload -Uz compinit; compinit -u -D"
zpty -w z "bindkey '^I' complete-word"
zpty -w z "compadd() { local -a hits; builtin compadd -A hits \"\$@\"; builtin compadd \"\$@\"; local h; for h in \$hits; do print -r -- \"HI\"\"T:\$h\"; done; }"
zpty -w z "done_() { print -r -- DO''NE; }; print -r -- RE''ADY"
wait_for() {
  local line
  for i in {1..600}; do
    if zpty -rt z line; then
      [[ $line == *HIT:* ]] && print -r -- "HIT:${${line##*HIT:}%%$'\r'*}"
      [[ $line == *$1* ]] && return 0
    else
      sleep 0.05
    fi
  done
  print -r -- "timed out waiting for $1"; exit 4
}
wait_for READY
zpty -w z "compprefuncs=(); comppostfuncs=(done_)"
zpty -w -n z "$2"$'\t'
wait_for DONE
zpty -d z
"#;

/// zsh's candidates for the command line `line` (cursor at its end).
fn zsh_completes(fpath: &Path, line: &str) -> Vec<String> {
    let out = shell_output(
        Command::new("zsh")
            .args(["-f", "-c", ZSH_DRIVER, "zsh"])
            .arg(fpath)
            .arg(line),
    );
    let mut hits: Vec<String> = out
        .lines()
        .filter_map(|l| l.strip_prefix("HIT:"))
        .map(str::to_string)
        .collect();
    hits.dedup();
    hits
}

/// zsh with its zpty module, or why not.
fn zsh_with_zpty() -> Result<(), String> {
    match Command::new("zsh")
        .args(["-f", "-c", "zmodload zsh/zpty"])
        .output()
    {
        Ok(o) if o.status.success() => Ok(()),
        Ok(_) => Err("zsh has no zpty module".into()),
        Err(_) => Err("no zsh on PATH".into()),
    }
}

#[test]
fn zsh_completes_a_flag_and_a_setting_value() {
    let test = "zsh_completes_a_flag_and_a_setting_value";
    if let Err(why) = zsh_with_zpty() {
        return skip(Tier::Zsh, test, &why);
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("_stackbench"), script("zsh")).unwrap();
    let flags = zsh_completes(dir.path(), "stackbench run --proto");
    assert_eq!(flags, ["--protocol"]);
    let values = zsh_completes(dir.path(), "stackbench run --protocol ");
    assert_eq!(values, ["raw", "http1", "tn3270", "amqp", "ftp", "h2"]);
    let nested = zsh_completes(dir.path(), "stackbench results l");
    assert_eq!(nested, ["list"]);
}

/// `stackbench man DIR` into a fresh directory: the pages it printed.
fn man_pages(dir: &Path) -> Vec<PathBuf> {
    let out = output_ok(stackbench().arg("man").arg(dir));
    let printed: Vec<PathBuf> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(PathBuf::from)
        .collect();
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let mut sorted = printed.clone();
    sorted.sort();
    assert_eq!(sorted, files, "printed paths are the pages written");
    printed
}

#[test]
fn man_writes_a_page_per_subcommand_naming_every_setting() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("man1");
    let pages = man_pages(&out);
    let names: Vec<String> = pages
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    for want in [
        "stackbench.1",
        "stackbench-run.1",
        "stackbench-study.1",
        "stackbench-results-list.1",
        "stackbench-lab-up.1",
        "stackbench-plan-cpu.1",
        "stackbench-k8s-render.1",
        "stackbench-completions.1",
        "stackbench-man.1",
    ] {
        assert!(names.iter().any(|n| n == want), "no {want} in {names:?}");
    }
    assert!(!names.iter().any(|n| n.contains("help")), "{names:?}");
    let run = std::fs::read_to_string(out.join("stackbench-run.1")).unwrap();
    for def in SETTINGS {
        // roff writes a literal hyphen as `\-`.
        let flag = def.flag().replace('-', "\\-");
        assert!(
            run.contains(&format!("\\fB{flag}\\fR")),
            "the run page lacks {}",
            def.flag()
        );
    }
}

#[test]
fn man_renders_every_page() {
    let test = "man_renders_every_page";
    if !Command::new("man")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return skip(Tier::Man, test, "no man (man-db) on PATH");
    }
    let dir = tempfile::tempdir().unwrap();
    for page in man_pages(dir.path()) {
        // --warnings: groff's complaints about the page go to stderr.
        let out = Command::new("man")
            .args(["--warnings", "-l"])
            .arg(&page)
            .env("MANWIDTH", "100")
            .env("MANPAGER", "cat")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && stderr.trim().is_empty(),
            "{}: {stderr}",
            page.display()
        );
        let title = page.file_stem().unwrap().to_string_lossy().into_owned();
        // NAME, then the page's name (justified: spaces vary) and its summary.
        let name = text.split_once("NAME").map(|(_, rest)| rest.trim_start());
        assert!(
            name.is_some_and(|n| n.starts_with(&format!("{title} "))),
            "{}:\n{text}",
            page.display()
        );
    }
}

#[test]
fn an_unknown_shell_is_one_line_naming_the_choices() {
    let out = stackbench().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("stackbench: error: invalid value 'tcsh' for '<SHELL>': "),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn an_unwritable_man_directory_is_one_line_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    // A file where a directory is needed fails for root too (permissions would not).
    let file = dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let target = file.join("man1");
    let out = stackbench().arg("man").arg(&target).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    let prefix = format!("stackbench: error: cannot create {}: ", target.display());
    assert!(err.starts_with(&prefix), "{err}");
    assert!(
        err.ends_with(": give man a directory you can write, e.g. ~/.local/share/man/man1\n"),
        "{err}"
    );
}
