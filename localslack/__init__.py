"""A local stand-in for Slack: the Web API the bot calls and the user side that calls the bot.

Used by the offline demo (``approval-bot demo``) and by the tests, so both run the bot's real
HTTP and Socket Mode paths with no Slack workspace.
"""

from localslack.calls import Call
from localslack.faults import Fault, RequestPredicate, contains
from localslack.limits import LIMITS
from localslack.mentions import Sent, live_tokens, sent_mentions
from localslack.server import LOCAL_BOT_TOKEN, LocalSlack
from localslack.socket_mode import LOCAL_APP_TOKEN, SocketModeTransport
from localslack.state import ApiError
from localslack.transport import BotResponse, HttpTransport, Transport
from localslack.user import LOCAL_SIGNING_SECRET, LocalSlackUser

__all__ = [
    "LIMITS",
    "LOCAL_APP_TOKEN",
    "LOCAL_BOT_TOKEN",
    "LOCAL_SIGNING_SECRET",
    "ApiError",
    "BotResponse",
    "Call",
    "Fault",
    "HttpTransport",
    "LocalSlack",
    "LocalSlackUser",
    "RequestPredicate",
    "Sent",
    "SocketModeTransport",
    "Transport",
    "contains",
    "live_tokens",
    "sent_mentions",
]
