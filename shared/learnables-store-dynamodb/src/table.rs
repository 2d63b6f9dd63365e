//! The table: attribute names and [`create_table`].

use std::time::Duration;

use aws_sdk_dynamodb::client::Waiters;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType,
};
use aws_sdk_dynamodb::Client;
use learnables_store::DefinitionStoreError;

/// Partition key (S): `DEF#{tenant}#{id}` ([`crate::definition_pk`]).
pub const PK: &str = "pk";
/// Sort key (S): always [`STATE_SK`].
pub const SK: &str = "sk";
/// The sort key of a definition's item.
pub const STATE_SK: &str = "STATE";
/// Compare-and-set counter (N): the state's [`learnables::DefinitionState::revision`].
pub const REVISION: &str = "revision";
/// JSON (S) of the [`learnables::DefinitionState`].
pub const STATE: &str = "state";

/// How long [`create_table`] waits for the new table to become active.
pub const CREATE_TABLE_WAIT: Duration = Duration::from_secs(60);

fn key(name: &str, key_type: KeyType) -> Result<KeySchemaElement, DefinitionStoreError> {
    KeySchemaElement::builder()
        .attribute_name(name)
        .key_type(key_type)
        .build()
        .map_err(DefinitionStoreError::backend)
}

fn attribute(name: &str) -> Result<AttributeDefinition, DefinitionStoreError> {
    AttributeDefinition::builder()
        .attribute_name(name)
        .attribute_type(ScalarAttributeType::S)
        .build()
        .map_err(DefinitionStoreError::backend)
}

/// Creates the definitions table `name` (string keys [`PK`] and [`SK`], on-demand billing, no
/// indexes, no TTL) and waits until it is active (at most [`CREATE_TABLE_WAIT`]). For tests,
/// local setups, and as the reference the CloudFormation template follows:
///
/// ```yaml
/// DefinitionsTable:
///   Type: AWS::DynamoDB::Table
///   Properties:
///     BillingMode: PAY_PER_REQUEST
///     AttributeDefinitions:
///       - { AttributeName: pk, AttributeType: S }
///       - { AttributeName: sk, AttributeType: S }
///     KeySchema:
///       - { AttributeName: pk, KeyType: HASH }
///       - { AttributeName: sk, KeyType: RANGE }
///     PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true }
/// ```
///
/// The store itself needs `dynamodb:GetItem` and `dynamodb:PutItem` on the table; this helper
/// also needs `CreateTable` and `DescribeTable` (its waiter).
///
/// # Errors
/// [`DefinitionStoreError::Backend`] with the SDK error as its source when the table exists
/// already, the caller may not create it, or it does not become active in time.
pub async fn create_table(client: &Client, name: &str) -> Result<(), DefinitionStoreError> {
    client
        .create_table()
        .table_name(name)
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(attribute(PK)?)
        .attribute_definitions(attribute(SK)?)
        .key_schema(key(PK, KeyType::Hash)?)
        .key_schema(key(SK, KeyType::Range)?)
        .send()
        .await
        .map_err(DefinitionStoreError::backend)?;
    client
        .wait_until_table_exists()
        .table_name(name)
        .wait(CREATE_TABLE_WAIT)
        .await
        .map_err(DefinitionStoreError::backend)?;
    Ok(())
}
