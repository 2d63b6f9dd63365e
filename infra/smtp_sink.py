"""A local SMTP server for the email channel's tests (tests/serve_notify.rs): aiosmtpd on
127.0.0.1:PORT, printing each message it accepts as one JSON line on stdout
({"from", "to": [...], "subject", "messageId", "contentType", "body"}, the headers unfolded and
the body decoded by Python's own email parser), and "ready" once it listens. With --auth USER:PASSWORD it requires
that login (AUTH PLAIN or LOGIN, allowed without TLS here: loopback only). It runs until its
stdin closes.

    .venv/bin/python infra/smtp_sink.py PORT [--auth USER:PASSWORD]

aiosmtpd is installed into .venv by infra/moto.sh.
"""

import email
import email.policy
import json
import sys

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword


class Sink:
    async def handle_DATA(self, server, session, envelope):
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        print(
            json.dumps(
                {
                    "from": envelope.mail_from,
                    "to": envelope.rcpt_tos,
                    "subject": str(message["Subject"]),
                    "messageId": str(message["Message-ID"]),
                    "contentType": message.get_content_type(),
                    "body": message.get_content(),
                }
            ),
            flush=True,
        )
        return "250 OK"


def main():
    port = int(sys.argv[1])
    auth = None
    if "--auth" in sys.argv:
        auth = sys.argv[sys.argv.index("--auth") + 1].split(":", 1)

    def authenticator(server, session, envelope, mechanism, data):
        ok = (
            isinstance(data, LoginPassword)
            and data.login.decode() == auth[0]
            and data.password.decode() == auth[1]
        )
        return AuthResult(success=ok)

    kwargs = {}
    if auth:
        kwargs = dict(
            authenticator=authenticator, auth_required=True, auth_require_tls=False
        )
    controller = Controller(Sink(), hostname="127.0.0.1", port=port, **kwargs)
    controller.start()
    print("ready", flush=True)
    sys.stdin.read()
    controller.stop()


if __name__ == "__main__":
    main()
