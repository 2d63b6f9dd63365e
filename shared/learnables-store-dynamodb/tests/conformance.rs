//! The DynamoDB definition store against the definition store conformance suite, on a local moto
//! server (see `learnables_store_dynamodb::testing`): each check gets a fresh table.

learnables_store::definition_store_conformance!(learnables_store_dynamodb::testing::store().await);
