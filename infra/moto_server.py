"""moto_server (moto.server.main) with requests served one at a time, and transactions that do
not copy whole tables: the emulator `bash infra/moto.sh` starts (`python -m moto_server -H HOST
-p PORT` from infra/). Its header says why each change is made."""
import copy
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


if __name__ == "__main__":
    install_journaled_transactions()
    moto.server.run_simple = run_simple
    moto.server.main(sys.argv[1:])


