//! The configuration secret against moto's Secrets Manager (issue 12 item 1): `bash
//! infra/moto.sh`, then `AWS_ENDPOINT_URL=… cargo test -p watcher-aws --test config_secret`.
//! Without `AWS_ENDPOINT_URL` these tests fail (never skip).

use aws_sdk_secretsmanager::Client;
use watcher_aws::config_secret::{
    config_from_env, fetch_config, ConfigSecretError, CONFIG_SECRET_ID_VAR,
    CONFIG_SECRET_VERSION_VAR,
};

mod common;
use common::{moto_config, unique};

const V1: &str = "[[operators]]\nid = \"ops\"\ntoken = \"ops-token-v1\"\n";
const V2: &str = "[[operators]]\nid = \"ops\"\ntoken = \"ops-token-v2\"\n";

#[tokio::test]
#[allow(
    unsafe_code,
    reason = "the test sets the variables a cold start reads; set_var is unsafe"
)]
async fn the_configuration_is_read_from_the_secret_current_or_pinned() {
    let aws = moto_config().await;
    let client = Client::new(&aws);
    let name = unique("watcher-config");
    let created = client
        .create_secret()
        .name(&name)
        .secret_string(V1)
        .send()
        .await
        .expect("create the secret");
    let v1 = created.version_id().expect("a version id").to_owned();
    assert_eq!(fetch_config(&client, &name, None).await.unwrap(), V1);
    client
        .put_secret_value()
        .secret_id(&name)
        .secret_string(V2)
        .send()
        .await
        .expect("a new version");
    // The current version, by name and by ARN; the pinned one stays what it was.
    assert_eq!(fetch_config(&client, &name, None).await.unwrap(), V2);
    let arn = created.arn().unwrap();
    assert_eq!(fetch_config(&client, arn, Some("")).await.unwrap(), V2);
    assert_eq!(fetch_config(&client, &name, Some(&v1)).await.unwrap(), V1);

    // What a function does at cold start: the environment names the secret, never holds it.
    // SAFETY: the only test of this binary that touches these variables.
    unsafe {
        std::env::set_var(CONFIG_SECRET_ID_VAR, &name);
        std::env::set_var(CONFIG_SECRET_VERSION_VAR, &v1);
    }
    assert_eq!(config_from_env(&aws).await.unwrap(), V1);
    // SAFETY: as above, the only test of this binary that touches these variables.
    unsafe { std::env::remove_var(CONFIG_SECRET_VERSION_VAR) };
    assert_eq!(config_from_env(&aws).await.unwrap(), V2);
    // SAFETY: as above.
    unsafe { std::env::remove_var(CONFIG_SECRET_ID_VAR) };
    assert!(matches!(
        config_from_env(&aws).await,
        Err(ConfigSecretError::NotNamed)
    ));
}

#[tokio::test]
async fn a_missing_secret_is_named_and_nothing_else_is_shown() {
    let client = Client::new(&moto_config().await);
    let name = unique("no-such-secret");
    let e = fetch_config(&client, &name, None).await.unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, ConfigSecretError::Fetch { .. }), "{e:?}");
    assert!(text.contains(&name), "{text}");
}

#[tokio::test]
async fn a_binary_secret_is_refused() {
    let client = Client::new(&moto_config().await);
    let name = unique("binary-secret");
    client
        .create_secret()
        .name(&name)
        .secret_binary(aws_sdk_secretsmanager::primitives::Blob::new(vec![
            0u8, 1, 2,
        ]))
        .send()
        .await
        .expect("create the secret");
    let e = fetch_config(&client, &name, None).await.unwrap_err();
    assert!(matches!(e, ConfigSecretError::NotText { .. }), "{e:?}");
}
