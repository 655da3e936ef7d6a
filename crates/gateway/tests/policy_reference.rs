//! `docs/policy.md`, the reference of the policy file, held to the loader.
//!
//! - Every ```` ```toml ```` block of the page is a complete policy that
//!   loads; every ```` ```toml refused ```` block is a complete policy that
//!   is refused, with an error containing the ```` ```text ```` block that
//!   follows it.
//! - Each table of the policy has one key table on the page (a Markdown
//!   table under an HTML comment `keys: TABLE`), listing exactly the keys
//!   the loader accepts in that table: none missing, none invented.
//! - What those rows claim is checked where it can be: a backticked default
//!   is the value the loader uses when the key is left out; `yes`/`no` in
//!   `required` is what leaving the key out does; limits written
//!   `` `A` to `B` `` load at both ends and are refused just outside.
//! - The example policies of `examples/` load.
//!
//! The keys are never listed here. Each table's keys are read from the
//! loader itself: an unknown key makes serde refuse the table with its own
//! list of the fields it expected (`unknown field `x`, expected one of
//! `a`, `b`, ...`), which the loader passes through in its error. A key
//! that takes a table of its own the test does not know fails the test as
//! well, so a new table cannot go undocumented either.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use portcullis_gateway::Policy;

/// The page, from the workspace root.
const DOC: &str = "docs/policy.md";
/// The file name the page's error texts show (`policy.toml: ...`).
const FILE: &str = "policy.toml";
/// A key no table of the policy accepts.
const PROBE: &str = "portcullis_probe";

/// The tables of a policy, named as the page's `keys:` markers name them.
const TABLES: [&str; 7] = [
    "top level",
    "[server]",
    "[credentials.NAME]",
    "[[tools]]",
    "[tools.http]",
    "[tools.ssh]",
    "[wrap]",
];

/// Keys whose value is one of [`TABLES`]: (parent table, key, table).
const NESTED: [(&str, &str, &str); 6] = [
    ("top level", "server", "[server]"),
    ("top level", "credentials", "[credentials.NAME]"),
    ("top level", "tools", "[[tools]]"),
    ("top level", "wrap", "[wrap]"),
    ("[[tools]]", "http", "[tools.http]"),
    ("[[tools]]", "ssh", "[tools.ssh]"),
];

/// A policy that loads and holds every table, each with its required keys
/// only (so leaving out any other key shows its default). The SSH tool's
/// `allow` also lists the ends of the port range, so that `port` can be
/// set to either end.
const BASE: &str = r#"
[server]
name = "base"

[credentials.token]
env = "PORTCULLIS_POLICY_REFERENCE_UNSET"

[[tools]]
name = "http_tool"
[tools.http]
method = "GET"
url = "http://127.0.0.1:8080/items/{id}"
allow = ["127.0.0.1:8080"]
[tools.input_schema]
type = "object"
required = ["id"]
properties.id = { type = "string" }

[[tools]]
name = "ssh_tool"
[tools.ssh]
host = "127.0.0.1"
user = "deploy"
argv = ["uptime"]
allow = ["127.0.0.1:22", "127.0.0.1:1", "127.0.0.1:65535"]
[tools.input_schema]
type = "object"

[wrap]
"#;

// ---------------------------------------------------------------------
// The loader's side.

fn base() -> toml::Table {
    BASE.parse().expect("BASE is TOML")
}

/// Load `policy` as the file [`FILE`]; the error is the loader's text.
fn load(policy: &toml::Table) -> Result<Policy, String> {
    let text = toml::to_string(policy).expect("a TOML table serializes");
    Policy::from_toml(&text, Path::new(FILE)).map_err(|err| err.to_string())
}

/// `table` inside `policy` (one of [`TABLES`], where [`BASE`] has it).
fn section<'a>(policy: &'a mut toml::Table, table: &str) -> &'a mut toml::Table {
    fn tool(policy: &mut toml::Table, index: usize) -> Option<&mut toml::Value> {
        policy.get_mut("tools")?.get_mut(index)
    }
    let found = match table {
        "top level" => return policy,
        "[server]" => policy.get_mut("server"),
        "[credentials.NAME]" => policy
            .get_mut("credentials")
            .and_then(|c| c.get_mut("token")),
        "[[tools]]" => tool(policy, 0),
        "[tools.http]" => tool(policy, 0).and_then(|t| t.get_mut("http")),
        "[tools.ssh]" => tool(policy, 1).and_then(|t| t.get_mut("ssh")),
        "[wrap]" => policy.get_mut("wrap"),
        other => panic!("{other} is not one of the tables the test knows: {TABLES:?}"),
    };
    found
        .and_then(toml::Value::as_table_mut)
        .unwrap_or_else(|| panic!("BASE has no {table}"))
}

/// [`BASE`] with `key` of `table` left out.
fn without(table: &str, key: &str) -> toml::Table {
    let mut policy = base();
    section(&mut policy, table).remove(key);
    policy
}

/// [`BASE`] with `key = value` in `table`.
fn with(table: &str, key: &str, value: toml::Value) -> toml::Table {
    let mut policy = base();
    section(&mut policy, table).insert(key.to_owned(), value);
    policy
}

/// A TOML value written as text.
fn toml_value(text: &str) -> Result<toml::Value, String> {
    let mut table: toml::Table = format!("value = {text}")
        .parse()
        .map_err(|err: toml::de::Error| err.message().to_owned())?;
    Ok(table.remove("value").expect("just written"))
}

/// The field list of serde's unknown-field error for [`PROBE`]:
/// "unknown field `p`, expected `a`", "... expected `a` or `b`",
/// "... expected one of `a`, `b`, `c`" or "... there are no fields".
fn expected_fields(message: &str) -> Option<BTreeSet<String>> {
    let marker = format!("unknown field `{PROBE}`, ");
    let rest = &message[message.find(&marker)? + marker.len()..];
    let rest = rest.lines().next().unwrap_or_default();
    if rest.starts_with("there are no fields") {
        return Some(BTreeSet::new());
    }
    let list = rest.strip_prefix("expected ")?;
    Some(
        list.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect(),
    )
}

/// The keys the loader accepts in `table`, read from its own error for an
/// unknown key there.
fn accepted_keys(table: &str) -> BTreeSet<String> {
    let err = load(&with(table, PROBE, toml::Value::Integer(1)))
        .map(drop)
        .expect_err("an unknown key must be refused");
    expected_fields(&err).unwrap_or_else(|| {
        panic!(
            "the loader's error for an unknown key in {table} no longer carries serde's list \
             of expected fields, so the keys cannot be read from the loader:\n{err}"
        )
    })
}

// ---------------------------------------------------------------------
// The page's side.

/// A fenced code block.
#[derive(Debug)]
struct Block {
    /// Line of the opening fence (1-based).
    line: usize,
    /// The info string (`toml`, `toml refused`, `text`, ...).
    info: String,
    text: String,
}

/// A row of a key table.
#[derive(Debug)]
struct Row {
    line: usize,
    key: String,
    required: String,
    default: String,
    limits: String,
}

/// A key table: the Markdown table under an HTML comment `keys: TABLE`.
#[derive(Debug)]
struct KeyTable {
    line: usize,
    table: String,
    rows: Vec<Row>,
}

#[derive(Debug)]
struct Doc {
    blocks: Vec<Block>,
    key_tables: Vec<KeyTable>,
}

/// Columns every key table has (others may follow).
const COLUMNS: [&str; 5] = ["key", "type", "required", "default", "limits"];

fn cells(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
    inner.split('|').map(|c| c.trim().to_owned()).collect()
}

/// `` `name` `` (a key as the page writes it) to `name`.
fn backticked_key(cell: &str) -> Option<&str> {
    let name = cell.strip_prefix('`')?.strip_suffix('`')?;
    let plain = !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    plain.then_some(name)
}

/// The first backticked span of a cell.
fn first_span(cell: &str) -> Option<&str> {
    let rest = cell.strip_prefix('`')?;
    rest.split_once('`').map(|(span, _)| span)
}

fn marker(line: &str) -> Option<&str> {
    let inner = line.trim().strip_prefix("<!--")?.strip_suffix("-->")?;
    Some(inner.trim().strip_prefix("keys:")?.trim())
}

impl Doc {
    fn read() -> Self {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(DOC);
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()));
        match Self::parse(&text) {
            Ok(doc) => doc,
            Err(problems) => panic!(
                "{DOC} does not follow its conventions:\n{}",
                problems.join("\n")
            ),
        }
    }

    fn parse(text: &str) -> Result<Self, Vec<String>> {
        let lines: Vec<&str> = text.lines().collect();
        let mut problems = Vec::new();
        let mut blocks = Vec::new();
        let mut key_tables = Vec::new();
        let mut pending: Option<(usize, String)> = None;
        let mut i = 0;
        while i < lines.len() {
            let line = lines[i];
            let number = i + 1;
            if let Some(info) = line.trim_start().strip_prefix("```") {
                let end = (i + 1..lines.len()).find(|&j| lines[j].trim() == "```");
                let Some(end) = end else {
                    problems.push(format!("{DOC} line {number}: the fence is never closed"));
                    break;
                };
                blocks.push(Block {
                    line: number,
                    info: info.trim().to_owned(),
                    text: lines[i + 1..end].join("\n"),
                });
                i = end + 1;
                continue;
            }
            if let Some(table) = marker(line) {
                if let Some((at, _)) = &pending {
                    problems.push(format!(
                        "{DOC} line {at}: the keys marker is not followed by a table"
                    ));
                }
                pending = Some((number, table.to_owned()));
                i += 1;
                continue;
            }
            if line.trim_start().starts_with('|') {
                let start = i;
                while i < lines.len() && lines[i].trim_start().starts_with('|') {
                    i += 1;
                }
                let header = cells(lines[start]);
                let is_key_table = header.first().is_some_and(|c| c == "key");
                match (pending.take(), is_key_table) {
                    (Some((_, table)), true) => match Self::key_table(&lines, start, i, table) {
                        Ok(t) => key_tables.push(t),
                        Err(mut p) => problems.append(&mut p),
                    },
                    (None, true) => problems.push(format!(
                        "{DOC} line {}: a table whose first column is `key` has no \
                         `keys: TABLE` marker above it, so its keys would go unchecked",
                        start + 1
                    )),
                    (Some((at, _)), false) => problems.push(format!(
                        "{DOC} line {at}: the keys marker is followed by a table whose first \
                         column is not `key`"
                    )),
                    (None, false) => {}
                }
                continue;
            }
            if !line.trim().is_empty()
                && let Some((at, _)) = pending.take()
            {
                problems.push(format!(
                    "{DOC} line {at}: the keys marker is not followed by a table"
                ));
            }
            i += 1;
        }
        if let Some((at, _)) = pending {
            problems.push(format!(
                "{DOC} line {at}: the keys marker is not followed by a table"
            ));
        }
        if problems.is_empty() {
            Ok(Self { blocks, key_tables })
        } else {
            Err(problems)
        }
    }

    /// The key table on `lines[start..end]`.
    fn key_table(
        lines: &[&str],
        start: usize,
        end: usize,
        table: String,
    ) -> Result<KeyTable, Vec<String>> {
        let header = cells(lines[start]);
        let mut problems = Vec::new();
        let column = |name: &str| header.iter().position(|c| c == name);
        if header.len() < COLUMNS.len() || COLUMNS.iter().any(|c| column(c).is_none()) {
            return Err(vec![format!(
                "{DOC} line {}: a key table has the columns {COLUMNS:?} (it has {header:?})",
                start + 1
            )]);
        }
        let at = |row: &[String], name: &str| {
            column(name)
                .and_then(|i| row.get(i))
                .cloned()
                .unwrap_or_default()
        };
        let mut rows = Vec::new();
        // The header, then the delimiter row, then one row per key.
        for (i, line) in lines.iter().enumerate().take(end).skip(start + 2) {
            let row = cells(line);
            let Some(key) = row.first().and_then(|c| backticked_key(c)) else {
                problems.push(format!(
                    "{DOC} line {}: a key table row starts with the key in backticks, \
                     e.g. `name` (found {:?})",
                    i + 1,
                    row.first()
                ));
                continue;
            };
            rows.push(Row {
                line: i + 1,
                key: key.to_owned(),
                required: at(&row, "required"),
                default: at(&row, "default"),
                limits: at(&row, "limits"),
            });
        }
        if problems.is_empty() {
            Ok(KeyTable {
                line: start + 1,
                table,
                rows,
            })
        } else {
            Err(problems)
        }
    }

    /// Every key row of every key table, with its table.
    fn rows(&self) -> impl Iterator<Item = (&str, &Row)> {
        self.key_tables
            .iter()
            .flat_map(|t| t.rows.iter().map(move |r| (t.table.as_str(), r)))
    }
}

fn assert_no_problems(what: &str, problems: &[String]) {
    assert!(problems.is_empty(), "{what}:\n\n{}", problems.join("\n\n"));
}

// ---------------------------------------------------------------------
// The tests.

#[test]
fn every_toml_block_loads_or_is_refused_with_the_error_shown_after_it() {
    let doc = Doc::read();
    let mut problems = Vec::new();
    let (mut loaded, mut refused) = (0, 0);
    for (i, block) in doc.blocks.iter().enumerate() {
        let line = block.line;
        match block.info.as_str() {
            "toml" => {
                loaded += 1;
                if let Err(err) = Policy::from_toml(&block.text, Path::new(FILE)) {
                    problems.push(format!(
                        "{DOC} line {line}: this ```toml block is a policy that must load, \
                         but the loader refuses it:\n{err}\n(mark it ```toml refused and \
                         show the error in a ```text block after it, if that is the point)"
                    ));
                }
            }
            "toml refused" => {
                refused += 1;
                let next = doc.blocks.get(i + 1).filter(|b| b.info == "text");
                let Some(shown) = next else {
                    problems.push(format!(
                        "{DOC} line {line}: a ```toml refused block is followed by a ```text \
                         block showing the error"
                    ));
                    continue;
                };
                let expected = shown.text.trim();
                match Policy::from_toml(&block.text, Path::new(FILE)) {
                    Ok(_) => problems.push(format!(
                        "{DOC} line {line}: this ```toml refused block loads, but the page \
                         says it is refused with:\n{expected}"
                    )),
                    Err(err) if expected.is_empty() || !err.to_string().contains(expected) => {
                        problems.push(format!(
                            "{DOC} line {line}: this ```toml refused block is refused with:\n\
                             {err}\nbut the ```text block at line {} shows:\n{expected}",
                            shown.line
                        ));
                    }
                    Err(_) => {}
                }
            }
            other if other.starts_with("toml") => problems.push(format!(
                "{DOC} line {line}: a TOML block is ```toml (loads) or ```toml refused, \
                 not ```{other}"
            )),
            _ => {}
        }
    }
    assert_no_problems(
        "TOML blocks of the page disagree with the loader",
        &problems,
    );
    assert!(
        loaded > 0 && refused > 0,
        "{DOC}: no ```toml or no ```toml refused block found ({loaded} and {refused})"
    );
}

#[test]
fn the_key_tables_list_exactly_the_keys_the_loader_accepts() {
    let doc = Doc::read();
    let mut problems = Vec::new();
    for key_table in &doc.key_tables {
        if !TABLES.contains(&key_table.table.as_str()) {
            problems.push(format!(
                "{DOC} line {}: a key table for {:?}, which is not a table of the policy \
                 (they are {TABLES:?})",
                key_table.line, key_table.table
            ));
        }
    }
    for table in TABLES {
        let accepted = accepted_keys(table);
        let documented: Vec<&KeyTable> =
            doc.key_tables.iter().filter(|t| t.table == table).collect();
        let [key_table] = documented.as_slice() else {
            problems.push(format!(
                "{DOC}: {table} has {} key tables (a `keys: {table}` marker above a table); \
                 it must have exactly one. The loader accepts: {}",
                documented.len(),
                list(&accepted)
            ));
            continue;
        };
        let mut seen = BTreeSet::new();
        for row in &key_table.rows {
            if !seen.insert(row.key.as_str()) {
                problems.push(format!(
                    "{DOC} line {}: `{}` has a second row in the key table of {table}",
                    row.line, row.key
                ));
            }
            if !accepted.contains(&row.key) {
                problems.push(format!(
                    "{DOC} line {}: `{}` is documented as a key of {table}, but the loader \
                     does not accept it there (it accepts {})",
                    row.line,
                    row.key,
                    list(&accepted)
                ));
            }
        }
        for key in &accepted {
            if !seen.contains(key.as_str()) {
                problems.push(format!(
                    "{DOC}: `{key}` is a key of {table} the loader accepts, but the key table \
                     of {table} (line {}) has no row for it",
                    key_table.line
                ));
            }
        }
    }
    assert_no_problems("the page's keys and the loader's disagree", &problems);
}

#[test]
fn every_table_the_loader_reads_is_a_table_the_test_knows() {
    let mut problems = Vec::new();
    for (parent, key, table) in NESTED {
        if !accepted_keys(parent).contains(key) {
            problems.push(format!(
                "{table} is read from `{key}` of {parent}, but {parent} has no key `{key}`"
            ));
        }
    }
    // A key whose value is a table (or an array of tables, or a table of
    // tables) of fixed keys refuses an unknown key inside it.
    let shapes = [
        format!("{{ {PROBE} = 1 }}"),
        format!("[{{ {PROBE} = 1 }}]"),
        format!("{{ x = {{ {PROBE} = 1 }} }}"),
    ];
    let unknown = format!("unknown field `{PROBE}`");
    for parent in TABLES {
        for key in accepted_keys(parent) {
            if NESTED.iter().any(|(p, k, _)| *p == parent && *k == key) {
                continue;
            }
            for shape in &shapes {
                let value = toml_value(shape).expect("the shapes are TOML");
                if let Err(err) = load(&with(parent, &key, value))
                    && err.contains(&unknown)
                {
                    problems.push(format!(
                        "`{key}` of {parent} takes a table of keys of its own ({shape} is \
                         refused with: {err}); add it to TABLES, NESTED and section() in \
                         this test and give it a key table in {DOC}"
                    ));
                }
            }
        }
    }
    assert_no_problems("the loader reads tables this test does not know", &problems);
}

#[test]
fn documented_defaults_are_what_the_loader_uses_when_a_key_is_left_out() {
    let doc = Doc::read();
    let mut problems = Vec::new();
    let mut checked = 0;
    for (table, row) in doc.rows() {
        if !row.default.contains('`') {
            continue; // prose, e.g. "none"
        }
        let (line, key) = (row.line, &row.key);
        let Some(span) = first_span(&row.default) else {
            problems.push(format!(
                "{DOC} line {line}: a default with backticks starts with the TOML value in \
                 backticks (found {:?})",
                row.default
            ));
            continue;
        };
        let value = match toml_value(span) {
            Ok(value) => value,
            Err(err) => {
                problems.push(format!(
                    "{DOC} line {line}: the default of `{key}`, `{span}`, is not a TOML value: \
                     {err}"
                ));
                continue;
            }
        };
        checked += 1;
        let left_out = load(&without(table, key));
        let written = load(&with(table, key, value));
        match (left_out, written) {
            (Ok(left_out), Ok(written)) => {
                if format!("{left_out:?}") != format!("{written:?}") {
                    problems.push(format!(
                        "{DOC} line {line}: the default of `{key}` in {table} is documented as \
                         `{span}`, but writing `{key} = {span}` gives another policy than \
                         leaving it out"
                    ));
                }
            }
            (Err(err), _) | (_, Err(err)) => problems.push(format!(
                "{DOC} line {line}: cannot check the default `{span}` of `{key}` in {table}: \
                 {err}"
            )),
        }
    }
    assert_no_problems("documented defaults disagree with the loader", &problems);
    assert!(checked > 0, "{DOC}: no default in backticks was found");
}

#[test]
fn documented_required_keys_are_required_and_the_others_are_not() {
    let doc = Doc::read();
    let mut problems = Vec::new();
    for (table, row) in doc.rows() {
        let (line, key) = (row.line, &row.key);
        let left_out = load(&without(table, key));
        match (row.required.as_str(), left_out) {
            ("yes", Ok(_)) => problems.push(format!(
                "{DOC} line {line}: `{key}` of {table} is documented as required, but a \
                 policy without it loads"
            )),
            ("no", Err(err)) => problems.push(format!(
                "{DOC} line {line}: `{key}` of {table} is documented as optional, but a \
                 policy without it is refused: {err}"
            )),
            ("yes" | "no", _) => {}
            (other, _) if other.starts_with("one of ") => {}
            (other, _) => problems.push(format!(
                "{DOC} line {line}: the required column says `yes`, `no` or `one of ...` \
                 (found {other:?})"
            )),
        }
    }
    assert_no_problems(
        "documented required keys disagree with the loader",
        &problems,
    );
}

#[test]
fn documented_limits_load_at_both_ends_and_are_refused_just_outside() {
    let doc = Doc::read();
    let mut problems = Vec::new();
    let mut checked = 0;
    for (table, row) in doc.rows() {
        // "`A` to `B`", possibly followed by prose.
        let Some((low, rest)) = row
            .limits
            .strip_prefix('`')
            .and_then(|r| r.split_once("` to `"))
        else {
            continue;
        };
        let Some((high, _)) = rest.split_once('`') else {
            continue;
        };
        let (line, key) = (row.line, &row.key);
        let (Ok(low), Ok(high)) = (low.parse::<i64>(), high.parse::<i64>()) else {
            problems.push(format!(
                "{DOC} line {line}: limits written `A` to `B` are integers (found {:?})",
                row.limits
            ));
            continue;
        };
        checked += 1;
        for (value, loads) in [
            (low, true),
            (high, true),
            (low - 1, false),
            (high + 1, false),
        ] {
            let result = load(&with(table, key, toml::Value::Integer(value)));
            match (result, loads) {
                (Err(err), true) => problems.push(format!(
                    "{DOC} line {line}: `{key} = {value}` is documented as within the limits \
                     of {table}, but it is refused: {err}"
                )),
                (Ok(_), false) => problems.push(format!(
                    "{DOC} line {line}: `{key} = {value}` is outside the documented limits \
                     of {table}, but it loads"
                )),
                _ => {}
            }
        }
    }
    assert_no_problems("documented limits disagree with the loader", &problems);
    assert!(
        checked > 0,
        "{DOC}: no limits written `A` to `B` were found"
    );
}

#[test]
fn the_example_policies_load() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let examples: [PathBuf; 3] = [
        root.join("examples/policy.toml"),
        root.join("examples/policy-20-tools.toml"),
        root.join("examples/wrap.toml"),
    ];
    for path in examples {
        if let Err(err) = Policy::load(&path) {
            panic!("{} must load: {err}", path.display());
        }
    }
}

#[test]
fn serde_field_lists_are_read_in_each_of_their_forms() {
    let read = |tail: &str| expected_fields(&format!("x\nunknown field `{PROBE}`, {tail}\n"));
    let set = |keys: &[&str]| Some(keys.iter().map(|k| (*k).to_owned()).collect());
    assert_eq!(read("expected `env`"), set(&["env"]));
    assert_eq!(read("expected `env` or `file`"), set(&["env", "file"]));
    assert_eq!(read("expected one of `a`, `b`, `c`"), set(&["a", "b", "c"]));
    assert_eq!(read("there are no fields"), set(&[]));
    assert_eq!(expected_fields("missing field `name`"), None);
}

#[test]
fn the_base_policy_loads() {
    if let Err(err) = load(&base()) {
        panic!("the test's BASE policy must load: {err}");
    }
}

fn list(keys: &BTreeSet<String>) -> String {
    let keys: Vec<String> = keys.iter().map(|k| format!("`{k}`")).collect();
    keys.join(", ")
}
