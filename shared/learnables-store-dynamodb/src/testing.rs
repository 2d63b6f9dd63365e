//! Test support (feature `test-utils`): a client for the local DynamoDB emulator (moto) and a
//! fresh table per test, for this crate's tests and those of the functions over it.
//!
//! The tests need moto: `bash infra/moto.sh` starts it on 127.0.0.1:5005, and the test script
//! sets `AWS_ENDPOINT_URL=http://127.0.0.1:5005`. Without that variable [`client`] panics,
//! saying so: a suite that skips itself is a test that cannot fail.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::{create_table, DynamoDefinitionStore};
use aws_config::BehaviorVersion;
use aws_sdk_dynamodb::config::{Credentials, Region};
use aws_sdk_dynamodb::Client;

/// The SDK's hyper 1 client on rustls with ring (the workspace's SDK crates carry no HTTPS client
/// of their own; the watcher's functions use the same one, `watcher_aws::sdk_env::https_client`,
/// which this crate does not depend on).
fn https_client() -> aws_sdk_dynamodb::config::SharedHttpClient {
    aws_smithy_http_client::Builder::new()
        .tls_provider(aws_smithy_http_client::tls::Provider::Rustls(
            aws_smithy_http_client::tls::rustls_provider::CryptoMode::Ring,
        ))
        .build_https()
}

/// A client for the emulator named by `AWS_ENDPOINT_URL`, with the region and credentials of
/// the environment (dummy ones by default: moto accepts any).
///
/// # Panics
/// When `AWS_ENDPOINT_URL` is not set.
pub async fn client() -> Client {
    let key = std::env::var("AWS_ACCESS_KEY_ID").unwrap_or_else(|_| "test".into());
    client_as(&key).await
}

/// [`client`], signing with the access key id `access_key`: the model's faults part
/// ([`model_faults`]) can then fail this client's calls and no other's.
///
/// # Panics
/// When `AWS_ENDPOINT_URL` is not set.
pub async fn client_as(access_key: &str) -> Client {
    let endpoint = std::env::var("AWS_ENDPOINT_URL").unwrap_or_else(|_| {
        panic!(
            "AWS_ENDPOINT_URL is not set. The DynamoDB definition store's tests run against a \
             local moto server: run `bash infra/moto.sh`, then \
             `AWS_ENDPOINT_URL=http://127.0.0.1:5005 AWS_ACCESS_KEY_ID=test \
             AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1 \
             cargo test -p learnables-store-dynamodb`"
        )
    });
    let var = |name: &str, default: &str| std::env::var(name).unwrap_or_else(|_| default.into());
    let config = aws_config::defaults(BehaviorVersion::latest())
        .http_client(https_client())
        .endpoint_url(endpoint)
        .region(Region::new(var("AWS_REGION", "us-east-1")))
        .credentials_provider(Credentials::new(
            access_key,
            var("AWS_SECRET_ACCESS_KEY", "test"),
            None,
            None,
            "learnables-store-dynamodb tests",
        ))
        .load()
        .await;
    Client::new(&config)
}

/// Sets the faults part of the model of AWS around the emulator (`POST /_model/faults` with the
/// JSON `settings`; infra/aws_model/faults.py): e.g. every DynamoDB `PutItem` of one access key
/// throttled, `{"rates": {"dynamodb": {"throttle": 1.0}}, "operations": ["PutItem"], "callers":
/// ["AKID…"]}`; `{}` turns faults off. Answers the part's state (JSON text).
///
/// # Panics
/// When `AWS_ENDPOINT_URL` is not set or is not `http://host:port`, or the emulator does not
/// answer 200 (an emulator without the model: start it with `infra/moto.sh`).
pub fn model_faults(settings: &str) -> String {
    use std::io::{Read, Write};
    let endpoint = std::env::var("AWS_ENDPOINT_URL").expect("AWS_ENDPOINT_URL is set");
    let host = endpoint
        .strip_prefix("http://")
        .map(|h| h.trim_end_matches('/'))
        .unwrap_or_else(|| panic!("AWS_ENDPOINT_URL is not http://host:port: {endpoint}"));
    let mut stream = std::net::TcpStream::connect(host).expect("connect to the emulator");
    write!(
        stream,
        "POST /_model/faults HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{settings}",
        settings.len()
    )
    .expect("send the settings");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("read the answer");
    assert!(
        answer.starts_with("HTTP/1.1 200") || answer.starts_with("HTTP/1.0 200"),
        "the model's faults part refused the settings: {answer}"
    );
    answer
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default()
}

/// A table name no other test of this run uses, starting `{prefix}-` (e.g. `definitions-test`).
pub fn unique_table(prefix: &str) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!(
        "{prefix}-{}-{}-{nanos}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// A store over a fresh table of its own.
pub async fn store() -> DynamoDefinitionStore {
    let client = client().await;
    let table = unique_table("definitions-test");
    create_table(&client, &table).await.expect(
        "create the test table (is moto answering at AWS_ENDPOINT_URL? `bash infra/moto.sh` starts it)",
    );
    DynamoDefinitionStore::new(client, table)
}

/// A second handle onto `store`'s table through a client of its own, as a second Lambda
/// instance would have.
pub async fn second_handle(store: &DynamoDefinitionStore) -> DynamoDefinitionStore {
    DynamoDefinitionStore::new(client().await, store.table())
}
