"""moto_server (moto.server.main) with requests served one at a time, transactions that do not
copy whole tables, and queries that read one partition: the emulator `bash infra/moto.sh`
starts (`python -m moto_server -H HOST -p PORT` from infra/). Its header says why each change
is made."""
import copy
import functools
import inspect
import sys
import threading

import moto.dynamodb.models as dynamodb_models
import moto.server
from werkzeug.serving import run_simple as werkzeug_run_simple

LOCK = threading.Lock()


def serialised(app):
    """`app` answering one request at a time."""

    def handle(environ, start_response):
        with LOCK:
            # The whole answer is produced inside the lock.
            return list(app(environ, start_response))

    return handle


def run_simple(host, port, app, **kwargs):
    werkzeug_run_simple(host, port, serialised(app), **kwargs)


# TransactWriteItems: moto keeps a deep copy of every table a transaction touches, to roll back
# on failure, so each transaction costs time in proportion to the table (300 ms at a few
# thousand items), which no real DynamoDB does. Here the tables are not copied; a journal of
# the items the transaction names (each as it was) is kept instead and put back on failure.
class _TablesUncopied:
    """The `copy` module, but a table is not copied (the journal below stands in)."""

    def __getattr__(self, name):
        return getattr(copy, name)

    @staticmethod
    def deepcopy(value, memo=None):
        if isinstance(value, dynamodb_models.Table):
            return value
        return copy.deepcopy(value, memo)


def _key_of(table, op):
    if "Key" in op:
        return op["Key"]
    attrs = op["Item"]
    key = {table.hash_key_attr: attrs[table.hash_key_attr]}
    if table.range_key_attr is not None:
        key[table.range_key_attr] = attrs[table.range_key_attr]
    return key


_transact = dynamodb_models.DynamoDBBackend.transact_write_items


def transact_write_items(self, transact_items):
    """moto's `transact_write_items`, rolled back from a journal of the items it names."""
    journal = []  # (table name, key, the item's attributes before, or None)
    for entry in transact_items[:100]:
        try:
            _, op = next(iter(entry.items()))
            name = op["TableName"]
            key = _key_of(self.tables[name], op)
            before = self.get_item(name, key)
            attrs = copy.deepcopy(before.to_json()["Attributes"]) if before else None
            journal.append((name, key, attrs))
        except Exception:  # noqa: BLE001  the transaction itself reports a malformed entry
            continue
    try:
        return _transact(self, transact_items)
    except Exception:
        for name, key, before in reversed(journal):
            if before is None:
                if self.get_item(name, key) is not None:
                    self.delete_item(name, key)
            else:
                self.put_item(name, before)
        raise


def install_journaled_transactions():
    """moto's DynamoDB backend, from now on in this process, rolls a failed transaction back
    from the journal above instead of from copies of its tables."""
    dynamodb_models.copy = _TablesUncopied()
    dynamodb_models.DynamoDBBackend.transact_write_items = transact_write_items


# Query: moto lists every item of the table and keeps those of the asked partition, so each
# Query costs time in proportion to the table (seconds a request at 100,000 items, minutes for
# the pages of an index sharded sixteen ways), which no real DynamoDB does: a Query reads its one
# partition. Here moto's query is handed only the items of the asked partition: on the table's
# own key straight from the table, on an index from a grouping of the table's items by the
# index's partition key, made once and kept until the next request that may write (every
# backend call but the reads named in _READS). Sorting, paging, conditions, filters and
# projections stay moto's.
_query = dynamodb_models.Table.query

# Backend calls that never change an item; every other call drops the index groupings.
_READS = ("get_", "describe_", "list_", "query", "scan", "batch_get_item", "transact_get_items",
          "check_unicity", "default_vpc_endpoint_service", "iter_tagged_resources")

# Bumped before and after each backend call that may write: a grouping made at another
# count is stale.
_writes = [0]


def _partition_items(table, hash_key):
    """The items of one partition of `table`, as moto's `all_items` would list them."""
    partition = table.items.get(hash_key)
    if partition is None:
        return []
    if table.range_key_attr:
        return list(partition.values())
    return [partition]


def _index_partition(table, index_name, hash_key_conditions):
    """The items of `table` whose attributes equal the index's partition key conditions, from
    the table's grouping for that index (made again when a write came since)."""
    cached = getattr(table, "_index_groupings", None)
    if cached is None or cached[0] != _writes[0]:
        cached = (_writes[0], {})
        table._index_groupings = cached
    groupings = cached[1]
    index = table.get_index(index_name)
    names = [k["AttributeName"] for k in index.schema if k["KeyType"] == "HASH"]
    asked = dict(hash_key_conditions)
    if sorted(asked) != sorted(names):
        return None
    if index_name not in groupings:
        grouping = {}
        for item in table.all_items():
            values = tuple(item.attrs.get(name) for name in names)
            if all(values):
                grouping.setdefault(values, []).append(item)
        groupings[index_name] = grouping
    return list(groupings[index_name].get(tuple(asked[name] for name in names), []))


def query(self, hash_key, *args, **kwargs):
    """moto's `Table.query`, handed only the asked partition's items."""
    # moto's backend passes the index's name as the eighth argument after the table.
    index_name = kwargs.get("index_name", args[6] if len(args) > 6 else None)
    if index_name is None:
        if hash_key is None:
            return _query(self, hash_key, *args, **kwargs)
        items = _partition_items(self, hash_key)
    else:
        conditions = kwargs.get("hash_key_conditions") or []
        try:
            items = _index_partition(self, index_name, conditions)
        except Exception:  # noqa: BLE001  moto's own query reports an unknown index
            items = None
        if items is None:
            return _query(self, hash_key, *args, **kwargs)
    self.all_items = lambda: items
    try:
        return _query(self, hash_key, *args, **kwargs)
    finally:
        del self.all_items


def _counting_writes(method):
    """`method`, bumping `_writes` before and after it runs."""

    @functools.wraps(method)
    def call(*args, **kwargs):
        _writes[0] += 1
        try:
            return method(*args, **kwargs)
        finally:
            _writes[0] += 1

    return call


def install_partition_queries():
    """moto's Query, from now on in this process, reads one partition of the table or index.
    Install after install_journaled_transactions (it wraps the backend's calls as they are)."""
    backend = dynamodb_models.DynamoDBBackend
    for name, member in list(vars(backend).items()):
        if name.startswith("_") or name.startswith(_READS) or not inspect.isfunction(member):
            continue
        setattr(backend, name, _counting_writes(member))
    dynamodb_models.Table.query = query


if __name__ == "__main__":
    install_journaled_transactions()
    install_partition_queries()
    moto.server.run_simple = run_simple
    moto.server.main(sys.argv[1:])


