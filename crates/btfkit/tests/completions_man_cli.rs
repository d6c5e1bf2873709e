//! `btfkit completions SHELL` and `btfkit man DIR`, generated from the
//! clap definitions. Oracles: bash runs the completion function as it does
//! on a <Tab>; zsh and fish parse their scripts; man-db renders the pages.

use std::process::{Command, Output};

fn btfkit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_btfkit"))
        .args(args)
        .output()
        .expect("run btfkit")
}

fn script(shell: &str) -> String {
    let o = btfkit(&["completions", shell]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).expect("UTF-8")
}

/// What bash's completion function offers for `words`, the last one being
/// completed.
fn bash_complete(bash: &std::path::Path, script: &str, words: &[&str]) -> Vec<String> {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("btfkit.bash");
    std::fs::write(&path, script).expect("write");
    let words_q: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let line = words.join(" ");
    let prog = format!(
        "source '{}'; COMP_WORDS=({}); COMP_CWORD={}; COMP_LINE='{line}'; COMP_POINT={}; \
         _btfkit btfkit '{}' '{}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        path.display(),
        words_q.join(" "),
        words.len() - 1,
        line.len(),
        words[words.len() - 1],
        words[words.len().saturating_sub(2)],
    );
    let out = testkit::run_ok(Command::new(bash).args(["--norc", "-c", &prog]));
    String::from_utf8_lossy(&out)
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn completions_bash_offers_commands_and_flags_when_bash_completes() {
    let Some(bash) = testkit::tool_or_skip("bash", "bash") else {
        return;
    };
    let s = script("bash");
    let commands = bash_complete(&bash, &s, &["btfkit", "d"]);
    for c in ["dump", "dedup", "diff"] {
        assert!(commands.iter().any(|w| w == c), "{c} not in {commands:?}");
    }
    let flags = bash_complete(&bash, &s, &["btfkit", "dump", "--f"]);
    assert!(flags.iter().any(|w| w == "--format"), "{flags:?}");
    let formats = bash_complete(&bash, &s, &["btfkit", "dump", "--format", ""]);
    for f in ["raw", "json", "c"] {
        assert!(formats.iter().any(|w| w == f), "{f} not in {formats:?}");
    }
    let layout = bash_complete(&bash, &s, &["btfkit", "layout", "--b"]);
    assert!(layout.iter().any(|w| w == "--base"), "{layout:?}");
}

#[test]
fn completions_zsh_and_fish_parse_in_zsh_and_fish() {
    for (shell, package, check) in [("zsh", "zsh", "-n"), ("fish", "fish", "--no-execute")] {
        let Some(sh) = testkit::tool_or_skip(shell, package) else {
            return;
        };
        let s = script(shell);
        assert!(s.contains("list") && s.contains("json"), "{shell}");
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(format!("btfkit.{shell}"));
        std::fs::write(&path, &s).expect("write");
        let o = Command::new(sh)
            .arg(check)
            .arg(&path)
            .output()
            .expect("run shell");
        assert!(
            o.status.success(),
            "{shell} {check}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    assert_eq!(btfkit(&["completions", "tcsh"]).status.code(), Some(2));
}

#[test]
fn man_pages_render_in_man_db_with_every_command_and_flag() {
    let Some(man) = testkit::tool_or_skip("man", "man-db") else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("man1");
    let o = btfkit(&["man", out.to_str().expect("path")]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let render = |page: &str| -> String {
        let o = Command::new(&man)
            .env("MANWIDTH", "100")
            .env("MAN_KEEP_FORMATTING", "0")
            .args(["-P", "cat", "-l"])
            .arg(out.join(page))
            .output()
            .expect("run man");
        assert!(
            o.status.success(),
            "{page}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        // Overstrike bold (c\bc) and underline (_\bc) to plain text.
        let mut text = String::new();
        for c in String::from_utf8_lossy(&o.stdout).chars() {
            if c == '\u{8}' {
                text.pop();
            } else {
                text.push(c);
            }
        }
        text
    };
    let top = render("btfkit.1");
    for c in ["dump", "check", "list", "completions", "man", "resolve"] {
        assert!(top.contains(&format!("btfkit-{c}(1)")), "{c} in {top}");
    }
    let dump = render("btfkit-dump.1");
    for f in ["--format", "--json", "--base", "id N"] {
        assert!(dump.contains(f), "{f} in {dump}");
    }
    let check = render("btfkit-check.1");
    for f in ["--target", "bpf-next", "--attach"] {
        assert!(check.contains(f), "{f} in {check}");
    }
}
