"""A typed answer (``reply 1 <text>``): its number read, its text checked before the click
and submitted after it, in the form the bot opens for Reply, Reject and Edit.

A card and a Home tab open the same forms, so both the ``reply 1 <text>`` of a card and the
``home reply 1 <text>`` of an ask go through here: text that Slack's text box would not
take is refused in one line before anything is clicked.
"""

from __future__ import annotations

from collections.abc import Callable

from bot.render.modals import TEXT_ACTION_ID, TEXT_BLOCK_ID, TEXT_MAX_LENGTH
from demo.console import Console
from demo.mrkdwn import plain
from localslack import LocalSlack, LocalSlackUser

MODAL_TIMEOUT = 10.0
# What a reply, a reason or an edited input is called in the one line saying it is too long.
TEXT_NAMES = {"reply": "a reply", "reject": "a reason", "edit": "the new input"}
_MAX_DIGITS = 6  # a card or ask number longer than this is no number


def numbered(rest: str) -> tuple[int | None, str | None]:
    """``"2 some text"`` → ``(2, "some text")``; the number is None when there is none."""
    number, _, text = rest.partition(" ")
    # isdecimal and isascii: "²" is a digit to str.isdigit, not to int().
    if not (number.isdecimal() and number.isascii() and len(number) <= _MAX_DIGITS):
        return None, None
    return int(number), text.strip() or None


def text_fits(console: Console, verb: str, text: str | None, *, typed: str, noun: str) -> bool:
    """Whether the text a click needs is there and short enough; if not, say so in one line.

    ``typed`` is what the person typed before the text (``reply 1``), ``noun`` what the
    number names (``card``, ``ask``).
    """
    if verb == "reply" and not text:
        console.note(f"type the reply after the {noun} number: {typed} <text>")
        return False
    if verb == "edit" and not text:
        console.note(f"type the new input after the {noun} number, as JSON: {typed} {{...}}")
        return False
    if verb in TEXT_NAMES and text and len(text) > TEXT_MAX_LENGTH:  # Slack would not let it be submitted
        console.note(
            f"{TEXT_NAMES[verb]} can be at most {TEXT_MAX_LENGTH:,} characters"
            f" (Slack's limit for a text box); yours has {len(text):,}"
        )
        return False
    return True


async def fill_form(
    *,
    slack: LocalSlack,
    user: LocalSlackUser,
    console: Console,
    acting: str,
    name: Callable[[str], str],
    verb: str,
    text: str | None,
    before: set[str],
    what: str,
) -> None:
    """After a Reply, Reject or Edit click on ``what`` (``card 1``): submit ``text`` in the form
    the bot opens. ``before``: the ids of the modals ``acting`` had open before the click."""
    if verb not in TEXT_NAMES:
        return
    label = verb.capitalize()
    # A modal the bot refused stays open (as in Slack), and a new views.open replaces it:
    # so wait for a view that was not open before, not for one more view.
    try:
        view = await slack.wait_for(
            lambda: next((v for v in slack.open_views(acting) if v["id"] not in before), None),
            timeout=MODAL_TIMEOUT,
            what=f"the {label} form to open",
        )
    except TimeoutError:
        console.note(f"the bot opened no {label} form for {what} within {MODAL_TIMEOUT:.0f} s")
        return
    values = {TEXT_BLOCK_ID: {TEXT_ACTION_ID: text or ""}}
    submitted = await user.submit_view(view=view, values=values, user_id=acting)
    errors = submitted.body.get("errors") if isinstance(submitted.body, dict) else None
    if errors:
        said = "; ".join(plain(str(e), user_name=name) for e in errors.values())
        console.note(f"the bot refused it: {said} ({what} still waits)")
    elif submitted.status != 200:
        console.note(f"the bot answered HTTP {submitted.status} to the form")
