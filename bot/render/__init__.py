"""Everything the bot shows in Slack, as pure functions of the run records.

No I/O here: listeners and the run engine's Slack side call these and send the result.
Blocks are built with ``slack_sdk.models`` so their limits are checked on ``to_dict()``.
"""

from bot.render.cards import (
    ACTION_ID_PREFIX,
    DEFAULT_VERDICTS,
    VERDICT_LABELS,
    action_id_for,
    ask_card,
    card_block_id,
    decided_card,
    encode_action_value,
    obsolete_card,
    parse_action_value,
    verdict_from_action_id,
)
from bot.render.messages import (
    ask_notice,
    graph_list,
    run_cancelled,
    run_completed,
    run_failed,
    run_started,
)
from bot.render.modals import (
    EDIT_CALLBACK_ID,
    REJECT_CALLBACK_ID,
    REPLY_CALLBACK_ID,
    TEXT_ACTION_ID,
    TEXT_BLOCK_ID,
    ModalTarget,
    callback_id_for,
    edit_modal,
    encode_modal_metadata,
    modal_text,
    parse_modal_metadata,
    reply_modal,
    verdict_for_callback_id,
)
from bot.render.mrkdwn import Rendered, escape, visible
from bot.render.titles import card_title, mention_id, mention_ids, readable_name, who_may_decide
from bot.render.usage import DEFAULT_COMMAND, help_text, mistake_text, unknown_graph

__all__ = [
    "ACTION_ID_PREFIX",
    "DEFAULT_COMMAND",
    "DEFAULT_VERDICTS",
    "EDIT_CALLBACK_ID",
    "REJECT_CALLBACK_ID",
    "REPLY_CALLBACK_ID",
    "TEXT_ACTION_ID",
    "TEXT_BLOCK_ID",
    "VERDICT_LABELS",
    "ModalTarget",
    "Rendered",
    "action_id_for",
    "ask_card",
    "ask_notice",
    "callback_id_for",
    "card_block_id",
    "card_title",
    "decided_card",
    "edit_modal",
    "encode_action_value",
    "encode_modal_metadata",
    "escape",
    "graph_list",
    "help_text",
    "mention_id",
    "mention_ids",
    "mistake_text",
    "modal_text",
    "obsolete_card",
    "parse_action_value",
    "parse_modal_metadata",
    "readable_name",
    "reply_modal",
    "run_cancelled",
    "run_completed",
    "run_failed",
    "run_started",
    "unknown_graph",
    "verdict_for_callback_id",
    "verdict_from_action_id",
    "visible",
    "who_may_decide",
]
