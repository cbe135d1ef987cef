//! The encrypted-file backend on a real directory: a round trip, the file's mode, and the two
//! ways reading fails — a key that did not write the file, and a file changed after it was
//! written.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use toolmux_secrets::{SecretError, SecretKey, SecretStore, SecretValue};

const KEY_A: &str = "0000000000000000000000000000000000000000000000000000000000000001";
const KEY_B: &str = "00000000000000000000000000000000000000000000000000000000000000ff";

fn store(path: &Path, key: &str) -> SecretStore {
    SecretStore::with_file(path.to_path_buf(), SecretKey::Given(key.to_string().into()))
}

fn mode(path: &Path) -> u32 {
    fs::metadata(path).expect("stat").permissions().mode() & 0o777
}

#[test]
fn round_trip_keeps_values_encrypted_and_private() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("state/secrets.enc");
    let store = store(&path, KEY_A);
    assert_eq!(store.list("").expect("empty list"), Vec::<String>::new());
    assert_eq!(store.get("NOPE").expect("missing"), None);

    store
        .set("GITHUB_TOKEN", &SecretValue::new("ghp-very-secret"))
        .expect("set");
    store
        .set("oauth/github/refresh", &SecretValue::new("r1"))
        .expect("set");
    assert_eq!(mode(&path), 0o600);
    let bytes = fs::read(&path).expect("read");
    assert!(
        !bytes.windows(15).any(|w| w == b"ghp-very-secret"),
        "the value is stored in the clear"
    );

    // A second store on the same file (another process, say) reads what the first wrote.
    let again = self::store(&path, KEY_A);
    assert_eq!(
        again
            .get("GITHUB_TOKEN")
            .expect("get")
            .map(|v| v.expose().to_string()),
        Some("ghp-very-secret".to_string())
    );
    assert_eq!(
        again.list("oauth/").expect("prefix"),
        vec!["oauth/github/refresh"]
    );
    assert!(again.delete("GITHUB_TOKEN").expect("delete"));
    assert!(!again.delete("GITHUB_TOKEN").expect("delete again"));
    assert_eq!(store.list("").expect("list"), vec!["oauth/github/refresh"]);
    assert_eq!(mode(&path), 0o600);
    assert!(matches!(
        store.set("bad name", &SecretValue::new("x")),
        Err(SecretError::BadName(_))
    ));
}

#[test]
fn a_wrong_key_is_named_as_such() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("secrets.enc");
    store(&path, KEY_A)
        .set("A", &SecretValue::new("1"))
        .expect("set");
    let err = store(&path, KEY_B).get("A").expect_err("wrong key");
    assert!(matches!(err, SecretError::WrongKey { .. }), "{err:?}");
    assert!(err.to_string().contains("different key"), "{err}");
    // Writing with the wrong key must not replace the file (and lose every value).
    assert!(
        store(&path, KEY_B)
            .set("B", &SecretValue::new("2"))
            .is_err()
    );
    assert_eq!(store(&path, KEY_A).list("").expect("list"), vec!["A"]);
}

#[test]
fn a_changed_file_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("secrets.enc");
    store(&path, KEY_A)
        .set("A", &SecretValue::new("value"))
        .expect("set");
    let mut bytes = fs::read(&path).expect("read");
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    fs::write(&path, &bytes).expect("tamper");
    let err = store(&path, KEY_A).get("A").expect_err("tampered");
    assert!(matches!(err, SecretError::Tampered { .. }), "{err:?}");
    assert!(err.to_string().contains("changed outside toolmux"), "{err}");

    fs::write(&path, b"not ours").expect("overwrite");
    let err = store(&path, KEY_A).list("").expect_err("foreign file");
    assert!(matches!(err, SecretError::Tampered { .. }), "{err:?}");
}

#[test]
fn a_key_file_is_made_private_and_a_readable_one_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let key = dir.path().join("config/toolmux/secret.key");
    let path = dir.path().join("secrets.enc");
    let store = SecretStore::with_file(path.clone(), SecretKey::File(key.clone()));
    store.set("A", &SecretValue::new("1")).expect("set");
    assert_eq!(mode(&key), 0o600);

    fs::set_permissions(&key, fs::Permissions::from_mode(0o644)).expect("chmod");
    let fresh = SecretStore::with_file(path, SecretKey::File(key));
    let err = fresh.get("A").expect_err("readable key file");
    assert!(err.to_string().contains("chmod 600"), "{err}");
}

#[tokio::test]
async fn concurrent_async_writers_lose_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = store(&dir.path().join("secrets.enc"), KEY_A);
    let writers: Vec<_> = (0..16)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .set_async(&format!("K{i:02}"), SecretValue::new(format!("v{i}")))
                    .await
            })
        })
        .collect();
    for writer in writers {
        writer.await.expect("task").expect("set");
    }
    assert_eq!(store.list_async("").await.expect("list").len(), 16);
    let value = store.get_async("K07").await.expect("get").expect("set");
    assert_eq!(value.expose(), "v7");
}
