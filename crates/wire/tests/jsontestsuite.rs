use portcullis_wire::{Limits, strict_json, utf8};
#[test]
fn dump() {
    let dir = std::path::Path::new("/work/shared/jsontestsuite/test_parsing");
    let mut names: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    for n in names {
        let bytes = std::fs::read(dir.join(&n)).unwrap();
        let r = utf8::decode(&bytes).and_then(|t| strict_json::parse_value(t, &Limits::default()));
        let nl = bytes.contains(&b'\n');
        match r {
            Ok(_) => eprintln!("DUMP {n} accept nl={nl}"),
            Err(e) => eprintln!("DUMP {n} reject nl={nl} {} {}", e.stage, e.reason),
        }
    }
}
