//! `btfkit funcs` as text: a header line names the columns, and the rows
//! under it line up with it. Oracle: nm's addresses and names of the same
//! object.

use std::process::Command;

#[test]
fn funcs_text_header_names_the_columns_rows_match_nm() {
    let Some(nm) = testkit::tool_or_skip("nm", "binutils") else {
        return;
    };
    if testkit::tool_or_skip("cc", "gcc").is_none() {
        return;
    }
    let fx = testkit::Fixture::new();
    fx.write(
        "f.c",
        "static int helper(int x) { return x * 3; }\n\
         int api(int y) { return helper(y) + 1; }\n\
         long other(long a, long b) { return a - b; }\n",
    );
    let obj = fx.cc("f.o", &["f.c"], &["-g", "-O0", "-c"]);
    let out = testkit::run_ok(
        Command::new(env!("CARGO_BIN_EXE_btfkit"))
            .arg("funcs")
            .arg(&obj),
    );
    let text = String::from_utf8_lossy(&out).into_owned();
    let mut lines = text.lines();
    let header = lines.next().expect("a header line");
    let columns: Vec<&str> = header.split_whitespace().collect();
    assert_eq!(
        columns,
        [
            "ADDRESS",
            "SYMBOL",
            "LOCATION",
            "SIZE",
            "STATUS",
            "FENTRY",
            "PROTOTYPE"
        ],
        "{text}"
    );
    let symbol_at = header.find("SYMBOL").expect("SYMBOL");
    let prototype_at = header.find("PROTOTYPE").expect("PROTOTYPE");

    let nm_out = testkit::run_ok(Command::new(nm).arg(&obj));
    let mut expected: Vec<(u64, String)> = String::from_utf8_lossy(&nm_out)
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            matches!(f.get(1), Some(&("T" | "t")))
                .then(|| Some((u64::from_str_radix(f[0], 16).ok()?, f[2].to_owned())))?
        })
        .collect();
    expected.sort();
    let mut rows: Vec<(u64, String)> = Vec::new();
    for l in lines {
        let addr = u64::from_str_radix(l[..18].trim_start_matches("0x"), 16).expect("address");
        let symbol = l[symbol_at..].split_whitespace().next().expect("symbol");
        assert!(
            l[prototype_at..].contains(&format!("{symbol}(")),
            "the prototype under PROTOTYPE: {l}"
        );
        rows.push((addr, symbol.to_owned()));
    }
    rows.sort();
    assert_eq!(rows, expected, "{text}");
}
