"""The bot deployed as one AWS Lambda function, locally: the Invoke API, real-shaped events, containers.

End-to-end tests of the Lambda deployment need the three things AWS would provide, each as
close to the real one as a test can afford, so that what passes here has a chance in AWS:

``LocalLambda`` (``invoke_api``, its errors in ``invoke_errors``)
    A local HTTP server speaking the Lambda ``Invoke`` REST API, recording the bot's
    self-invocations instead of running them and failing on demand the way Lambda fails.

Event builders (``events``, the front door's answers in ``responses``)
    ``function_url_event``, ``rest_api_event``, ``http_api_event`` and ``scheduled_event``
    build the events Lambda hands a handler, in AWS's documented shapes; ``signed`` signs a
    body the way Slack does; ``bot_response`` is what Slack receives back.

``LambdaContainer`` (``containers``, choosers in ``pool``)
    One execution environment: a subprocess importing the handler on its first event (the
    cold start), then handling events one at a time. ``LambdaPool`` hands them out the way
    Lambda scales; ``round_robin`` cycles a fixed set.

``LambdaTransport`` (``transport``)
    The ``Transport`` of ``localslack`` for this deployment: ``LocalSlackUser`` drives the
    Lambda function exactly as it drives the HTTP server. ``replay`` (``handoff``) runs what the
    function handed off through ``LocalLambda``.

The fixtures ``local_lambda`` and ``lambda_pool`` (``fixtures``) are re-exported here, so that
``pytest_plugins = ["tests.support.lambda_"]`` registers them. A test then reads::

    async def test_approval_on_lambda(local_lambda, lambda_pool, local_slack, slack_user, aws_env, ...):
        pool = lambda_pool({**aws_env, **local_lambda.env(), "SLACK_API_URL": local_slack.api_url, ...})
        user = slack_user(transport=LambdaTransport(containers=pool))
        ack = await user.slash_command(text="run deploy billing 1.2.3", user_id="U1", channel_id="C1")
        await replay(local_lambda, pool)  # the work the ack handed off: it posts the card
"""

from tests.support.lambda_.containers import (
    ContainerInvocation,
    LambdaContainer,
    LambdaContainerDied,
    LambdaError,
    LambdaHandlerError,
    LambdaTimeout,
)
from tests.support.lambda_.events import (
    FORM,
    SLACK_CLIENT_HEADERS,
    SLACK_PATH,
    EventFormat,
    aws_encodes_as_base64,
    function_url_event,
    http_api_event,
    rest_api_event,
    scheduled_event,
    signed,
)
from tests.support.lambda_.fixtures import lambda_pool, local_lambda
from tests.support.lambda_.handoff import Replayed, replay
from tests.support.lambda_.identity import ACCOUNT, FUNCTION_NAME
from tests.support.lambda_.invoke_api import Invocation, LocalLambda
from tests.support.lambda_.pool import ContainerChooser, LambdaPool, round_robin
from tests.support.lambda_.responses import bot_response
from tests.support.lambda_.transport import Ack, LambdaTransport

__all__ = [
    "ACCOUNT",
    "FORM",
    "FUNCTION_NAME",
    "SLACK_CLIENT_HEADERS",
    "SLACK_PATH",
    "Ack",
    "ContainerChooser",
    "ContainerInvocation",
    "EventFormat",
    "Invocation",
    "LambdaContainer",
    "LambdaContainerDied",
    "LambdaError",
    "LambdaHandlerError",
    "LambdaPool",
    "LambdaTimeout",
    "LambdaTransport",
    "LocalLambda",
    "Replayed",
    "aws_encodes_as_base64",
    "bot_response",
    "function_url_event",
    "http_api_event",
    "lambda_pool",
    "local_lambda",
    "replay",
    "rest_api_event",
    "round_robin",
    "scheduled_event",
    "signed",
]
