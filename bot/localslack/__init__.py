"""A local stand-in for Slack: the Web API the bot calls and the user side that calls the bot.

Used by the offline demo (``approval-bot demo``) and by the tests, so both run the bot's real
HTTP paths with no Slack workspace.
"""

from bot.localslack.limits import LIMITS
from bot.localslack.server import LOCAL_BOT_TOKEN, LocalSlack
from bot.localslack.state import ApiError
from bot.localslack.user import LOCAL_SIGNING_SECRET, BotResponse, LocalSlackUser

__all__ = [
    "LIMITS",
    "LOCAL_BOT_TOKEN",
    "LOCAL_SIGNING_SECRET",
    "ApiError",
    "BotResponse",
    "LocalSlack",
    "LocalSlackUser",
]
