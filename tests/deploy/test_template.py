"""The AWS SAM template (template.yaml): least privilege, and the store the code expects.

The template is rendered offline with the SAM translator, as `sam deploy` would have
CloudFormation do it (no AWS calls: no managed policies to look up, a fixed Region),
and the rendered CloudFormation is checked: every IAM statement names this stack's own
resources, the table and the bucket are what ``approval-bot create-table`` makes, the
DynamoDB and S3 actions are exactly the calls ``persistence/`` makes, and the Slack
secrets never appear as plain values. ``cfn-lint`` runs as well.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from botocore.exceptions import ClientError
from pydantic import SecretStr
from samtranslator.parser.parser import Parser
from samtranslator.translator.translator import Translator

from bot.settings import Settings
from persistence import aws

REPO = Path(__file__).resolve().parents[2]
TEMPLATE = REPO / "template.yaml"

Template = dict[str, Any]

FUNCTION = "ApprovalBotFunction"
FUNCTION_NAME = {"Fn::Sub": "${AWS::StackName}-approval-bot"}
ROLE = "FunctionRole"
TABLE = "RunsTable"
BUCKET = "SnapshotBucket"
QUEUE = "FailedInvocationsQueue"
LOG_GROUP = "FunctionLogGroup"

PROFILE_ARN = {
    "Fn::Sub": "arn:${AWS::Partition}:bedrock:${AWS::Region}:${AWS::AccountId}:inference-profile/${BedrockModelId}"
}
_MODEL = {
    "Fn::Join": [
        ".",
        [
            {"Fn::Select": [1, {"Fn::Split": [".", {"Ref": "BedrockModelId"}]}]},
            {"Fn::Select": [2, {"Fn::Split": [".", {"Ref": "BedrockModelId"}]}]},
        ],
    ]
}
MODELS_BEHIND_PROFILE = [
    # The model in whichever Region the profile routes to, and a global profile's
    # Region-less model ARN.
    {"Fn::Sub": ["arn:${AWS::Partition}:bedrock:*::foundation-model/${Model}", {"Model": _MODEL}]},
    {"Fn::Sub": ["arn:${AWS::Partition}:bedrock:::foundation-model/${Model}", {"Model": _MODEL}]},
]

SELF_ARN = {
    "Fn::Sub": "arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:" + FUNCTION_NAME["Fn::Sub"]
}

# Resources an Allow statement may name that are not simply one of the stack's own
# resources (a Ref or GetAtt of it, or a "${Resource.Arn}/…" path without wildcards).
# Each is justified here; any other one fails the test.
JUSTIFIED: dict[tuple[str, str], str] = {
    ("StateObjects", json.dumps({"Fn::Sub": f"${{{BUCKET}.Arn}}/{aws.STATE_PREFIX}*"})): (
        "state objects under the bucket's state prefix; each key carries a random nonce"
    ),
    ("InvokeSelf", json.dumps(SELF_ARN)): "this function by its fixed name (a GetAtt of it would be circular)",
    ("ReadSlackSecret", json.dumps({"Ref": "SlackSecretArn"})): (
        "the one secret the operator created for this bot (a parameter, not a pattern)"
    ),
    ("InvokeModelProfile", json.dumps(PROFILE_ARN)): "one inference profile, in this account and Region",
    ("XRayTraces", json.dumps("*")): "X-Ray's trace writes have no resource-level permissions (XRayTracing only)",
    **{
        ("InvokeModelThroughProfileOnly", json.dumps(model)): (
            "the model behind that profile in whichever Region it routes to; only with the "
            "bedrock:InferenceProfileArn condition (checked below)"
        )
        for model in MODELS_BEHIND_PROFILE
    },
}


# -- loading and rendering --------------------------------------------------------------


def _intrinsic(loader: Any, suffix: str, node: Any) -> dict[str, Any]:
    value: Any
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        assert isinstance(node, yaml.MappingNode)
        value = loader.construct_mapping(node, deep=True)
    if suffix == "GetAtt" and isinstance(value, str):
        value = value.split(".", 1)
    return {"Ref" if suffix == "Ref" else f"Fn::{suffix}": value}


# PyYAML's safe loader plus CloudFormation's short tags (!Ref, !Sub, !GetAtt, …).
_CfnLoader: Any = type("_CfnLoader", (yaml.SafeLoader,), {})
_CfnLoader.add_multi_constructor("!", _intrinsic)


def load_sam() -> Template:
    loaded = yaml.load(TEMPLATE.read_text(), Loader=_CfnLoader)  # a SafeLoader subclass
    assert isinstance(loaded, dict)
    return loaded


def render(sam: Template) -> Template:
    """The CloudFormation the SAM transform makes of ``sam``, offline."""
    sam = copy.deepcopy(sam)
    # What `sam package` does: the code is an S3 object by the time the transform runs.
    sam["Resources"][FUNCTION]["Properties"]["CodeUri"] = "s3://example-bucket/approval-bot.zip"
    translator = Translator(None, Parser(), boto_session=boto3.session.Session(region_name="us-east-1"))
    # No managed policies may be named: an empty map makes any such name an error.
    rendered: Template = translator.translate(sam, parameter_values={}, get_managed_policy_map=dict)
    return rendered


@pytest.fixture(scope="module")
def sam() -> Template:
    return load_sam()


@pytest.fixture(scope="module")
def cfn(sam: Template) -> Template:
    return render(sam)


def resources(cfn: Template, kind: str) -> dict[str, Template]:
    return {name: r for name, r in cfn["Resources"].items() if r["Type"] == kind}


def props(cfn: Template, name: str) -> Template:
    properties: Template = cfn["Resources"][name]["Properties"]
    return properties


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


# -- IAM: every statement scoped to this stack --------------------------------------------


def policy_documents(cfn: Template) -> Iterator[tuple[str, bool, Template]]:
    """(where, is_identity_policy, document) for every policy document in the template."""
    for name, resource in cfn["Resources"].items():
        kind, properties = resource["Type"], resource.get("Properties", {})
        if kind == "AWS::IAM::Role":
            for policy in properties.get("Policies", []):
                yield f"{name}/{policy['PolicyName']}", True, policy["PolicyDocument"]
        elif kind in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
            yield name, True, properties["PolicyDocument"]
        elif kind in ("AWS::S3::BucketPolicy", "AWS::SQS::QueuePolicy", "AWS::SNS::TopicPolicy"):
            yield name, False, properties["PolicyDocument"]


def _own_path(resource: Any, own: set[str]) -> bool:
    """A Ref or GetAtt of one of the stack's resources, or a path below one without wildcards."""
    if not isinstance(resource, dict) or len(resource) != 1:
        return False
    ((fn, arg),) = resource.items()
    if fn == "Ref":
        return arg in own
    if fn == "Fn::GetAtt":
        return as_list(arg)[0] in own
    if fn == "Fn::Sub" and isinstance(arg, str):
        head = re.match(r"\$\{([A-Za-z0-9]+)\.Arn\}", arg)
        return head is not None and head.group(1) in own and "*" not in arg
    return False


def iam_problems(cfn: Template) -> list[str]:
    """Everything in ``cfn`` that grants more than this stack's own resources."""
    own = set(cfn["Resources"])
    problems: list[str] = []
    for name, resource in cfn["Resources"].items():
        properties = resource.get("Properties", {})
        if properties.get("ManagedPolicyArns"):
            problems.append(f"{name}: managed policies {properties['ManagedPolicyArns']}")
        if resource["Type"] == "AWS::IAM::ManagedPolicy":
            problems.append(f"{name}: a managed policy")
    for where, identity, document in policy_documents(cfn):
        for statement in as_list(document["Statement"]):
            sid = statement.get("Sid", "<no Sid>")
            label = f"{where}/{sid}"
            if statement.get("NotAction") or statement.get("NotResource"):
                problems.append(f"{label}: NotAction/NotResource")
            if statement["Effect"] != "Allow":
                # A Deny only narrows: its resources must be ours, wildcards below them are fine.
                for r in as_list(statement["Resource"]):
                    text = json.dumps(r)
                    if not any(f'"{n}"' in text or f"${{{n}." in text for n in own):
                        problems.append(f"{label}: denies on {text}, not this stack's resource")
                continue
            if not identity and "*" in json.dumps(statement.get("Principal", "")):
                problems.append(f"{label}: allows any principal")
            for action in as_list(statement["Action"]):
                if "*" in action:
                    problems.append(f"{label}: wildcard action {action}")
            for r in as_list(statement.get("Resource", [])):
                key = (sid, json.dumps(r))
                if key in JUSTIFIED:
                    continue
                if not _own_path(r, own):
                    problems.append(f"{label}: resource {json.dumps(r)} is not scoped to this stack")
    return problems


def role_statements(cfn: Template) -> dict[str, Template]:
    statements: dict[str, Template] = {}
    for where, identity, document in policy_documents(cfn):
        if identity:
            for statement in as_list(document["Statement"]):
                assert statement["Sid"] not in statements, f"duplicate Sid {statement['Sid']} in {where}"
                statements[statement["Sid"]] = statement
    return statements


def test_every_iam_statement_is_scoped_to_this_stack(cfn: Template) -> None:
    assert iam_problems(cfn) == []


def test_the_scope_check_catches_a_wildcard_and_a_managed_policy(sam: Template) -> None:
    """The check above fails on the mistakes it is there for (so it cannot pass vacuously)."""
    broken = copy.deepcopy(sam)
    role = broken["Resources"][ROLE]["Properties"]
    role["Policies"][0]["PolicyDocument"]["Statement"].append(
        {"Sid": "Oops", "Effect": "Allow", "Action": "s3:GetObject", "Resource": "*"}
    )
    role["Policies"][0]["PolicyDocument"]["Statement"].append(
        {"Sid": "Oops2", "Effect": "Allow", "Action": "dynamodb:*", "Resource": {"Fn::GetAtt": [TABLE, "Arn"]}}
    )
    role["Policies"][0]["PolicyDocument"]["Statement"].append(
        {
            "Sid": "Oops3",
            "Effect": "Allow",
            "Action": "sqs:SendMessage",
            "Resource": {"Fn::Sub": "${" + QUEUE + ".Arn}*"},
        }
    )
    role["ManagedPolicyArns"] = ["arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"]
    problems = "\n".join(iam_problems(render(broken)))
    assert 'Oops: resource "*" is not scoped' in problems
    assert "Oops2: wildcard action dynamodb:*" in problems
    assert "Oops3: resource" in problems
    assert "managed policies" in problems


def test_every_justified_exception_is_still_used(cfn: Template) -> None:
    """An exception nobody needs any more is removed from the list, not left to widen it."""
    used = {(s["Sid"], json.dumps(r)) for s in role_statements(cfn).values() for r in as_list(s["Resource"])}
    assert set(JUSTIFIED) <= used


def test_the_role_is_explicit_with_no_managed_policy(cfn: Template) -> None:
    function = props(cfn, FUNCTION)
    assert function["Role"] == {"Fn::GetAtt": [ROLE, "Arn"]}
    assert list(resources(cfn, "AWS::IAM::Role")) == [ROLE]
    assert "ManagedPolicyArns" not in props(cfn, ROLE)
    trust = props(cfn, ROLE)["AssumeRolePolicyDocument"]["Statement"]
    assert trust == [{"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}]


def _client_calls(client_attr: str) -> set[str]:
    """The boto3 methods ``persistence/`` calls at runtime on ``self.<client_attr>``.

    ``persistence/aws.py`` is left out: its calls are the one-off ``create-table`` set-up,
    which this stack replaces.
    """
    calls: set[str] = set()
    for path in (REPO / "persistence").glob("*.py"):
        if path.name != "aws.py":
            calls |= set(re.findall(rf"self\.{client_attr}\.([a-z_]+)\(", path.read_text()))
    return calls


def _iam_action(service: str, method: str) -> str:
    return f"{service}:" + "".join(part.capitalize() for part in method.split("_"))


def test_dynamodb_actions_are_exactly_the_calls_the_store_makes(cfn: Template) -> None:
    called = {_iam_action("dynamodb", m) for m in _client_calls("_ddb")}
    assert called >= {"dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:Query"}, called
    statements = role_statements(cfn)
    assert set(statements["RunStore"]["Action"]) == called
    assert statements["RunStore"]["Resource"] == {"Fn::GetAtt": [TABLE, "Arn"]}
    # The sweeper queries the sweep index, /graph runs the channel index, a person's runs the
    # starter index; nothing else touches one.
    assert as_list(statements["Indexes"]["Action"]) == ["dynamodb:Query"]
    assert as_list(statements["Indexes"]["Resource"]) == [
        {"Fn::Sub": f"${{{TABLE}.Arn}}/index/{index}"}
        for index in (aws.SWEEP_INDEX, aws.CHANNEL_INDEX, aws.STARTER_INDEX)
    ]
    every_dynamodb_action = {a for s in statements.values() for a in as_list(s["Action"]) if a.startswith("dynamodb:")}
    assert every_dynamodb_action == called


def test_s3_actions_are_exactly_the_calls_the_offloader_makes(cfn: Template) -> None:
    called = {_iam_action("s3", m) for m in _client_calls("_s3")}
    assert called == {"s3:PutObject", "s3:GetObject", "s3:DeleteObject"}, called
    statements = role_statements(cfn)
    assert set(as_list(statements["StateObjects"]["Action"])) == called
    # ListBucket on the bucket only, so that a missing object is a 404 (SnapshotMoved), not a 403.
    assert as_list(statements["MissingStateIs404"]["Action"]) == ["s3:ListBucket"]
    assert statements["MissingStateIs404"]["Resource"] == {"Fn::GetAtt": [BUCKET, "Arn"]}
    every_s3_action = {a for s in statements.values() for a in as_list(s["Action"]) if a.startswith("s3:")}
    assert every_s3_action == called | {"s3:ListBucket"}


def test_the_other_grants_name_one_thing_each(cfn: Template) -> None:
    statements = role_statements(cfn)
    assert statements["WriteOwnLogs"]["Resource"] == {"Fn::GetAtt": [LOG_GROUP, "Arn"]}
    assert set(statements["WriteOwnLogs"]["Action"]) == {"logs:CreateLogStream", "logs:PutLogEvents"}
    invoke = statements["InvokeSelf"]
    assert as_list(invoke["Action"]) == ["lambda:InvokeFunction"]
    assert invoke["Resource"] == SELF_ARN
    assert props(cfn, FUNCTION)["FunctionName"] == FUNCTION_NAME  # the name SELF_ARN spells out
    assert as_list(statements["ReadSlackSecret"]["Action"]) == ["secretsmanager:GetSecretValue"]
    assert as_list(statements["FailedInvocationsToQueue"]["Action"]) == ["sqs:SendMessage"]
    assert statements["FailedInvocationsToQueue"]["Resource"] == {"Fn::GetAtt": [QUEUE, "Arn"]}


def test_every_aws_service_the_code_calls_is_granted_and_nothing_more(cfn: Template) -> None:
    """A new boto3 client in the code fails here until the role is given (only) what it needs."""
    called = {"bedrock"}  # Strands' BedrockModel makes its own bedrock-runtime client
    for package in ("bot", "engine", "persistence", "graph_defs"):
        for path in (REPO / package).rglob("*.py"):
            called |= set(re.findall(r"client\(\s*\"([a-z0-9-]+)\"", path.read_text()))
    called = {"bedrock" if service == "bedrock-runtime" else service for service in called}
    assert called >= {"dynamodb", "s3", "lambda", "secretsmanager"}, called
    # Used by Lambda itself on the function's behalf: its logs and its failed events.
    by_lambda = {"logs", "sqs", "xray"}  # X-Ray: its tracing, when XRayTracing turns it on
    granted = {a.split(":")[0] for s in role_statements(cfn).values() for a in as_list(s["Action"])}
    assert granted == called | by_lambda


def test_bedrock_models_are_reachable_only_through_the_profile(cfn: Template, sam: Template) -> None:
    statements = role_statements(cfn)
    model_actions = {"bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"}
    profile, model = statements["InvokeModelProfile"], statements["InvokeModelThroughProfileOnly"]
    assert set(profile["Action"]) == model_actions == set(model["Action"])
    assert profile["Resource"] == PROFILE_ARN and "Condition" not in profile
    assert model["Resource"] == MODELS_BEHIND_PROFILE
    assert model["Condition"] == {"StringEquals": {"bedrock:InferenceProfileArn": PROFILE_ARN}}
    every_bedrock_action = {a for s in statements.values() for a in as_list(s["Action"]) if a.startswith("bedrock:")}
    assert every_bedrock_action == model_actions
    # The role and the code agree on the model: the function is told the same id, and
    # the template's default is the code's.
    from graph_defs.models import DEFAULT_BEDROCK_MODEL_ID

    assert props(cfn, FUNCTION)["Environment"]["Variables"]["BEDROCK_MODEL_ID"] == {"Ref": "BedrockModelId"}
    parameter = sam["Parameters"]["BedrockModelId"]
    assert parameter["Default"] == DEFAULT_BEDROCK_MODEL_ID
    # The foundation model is the id without its first part (the profile's scope), which
    # the Split/Select above computes; the allowed pattern keeps the id to three parts.
    pattern = re.compile(parameter["AllowedPattern"])
    for good in (DEFAULT_BEDROCK_MODEL_ID, "us.anthropic.claude-sonnet-4-20250514-v1:0", "eu.amazon.nova-pro-v1:0"):
        assert pattern.fullmatch(good), good
    for bad in ("anthropic.claude-sonnet-4-6", "arn:aws:bedrock:us-east-1:1:inference-profile/x", "a.b.c.d"):
        assert not pattern.fullmatch(bad), bad


# -- the function ------------------------------------------------------------------------


def test_the_function(cfn: Template, sam: Template) -> None:
    function = props(cfn, FUNCTION)
    assert function["Runtime"] in ("python3.12", "python3.13")
    assert function["Architectures"] == ["arm64"]
    assert function["Handler"] == "bot.lambda_handler.handler"
    assert function["FunctionName"] == FUNCTION_NAME
    assert sam["Resources"][FUNCTION]["Properties"]["CodeUri"] == "."
    assert function["Timeout"] == 900  # Lambda's maximum: a graph pass may take minutes
    assert function["MemorySize"] >= 1769  # one full vCPU for cold-start imports
    assert function["LoggingConfig"]["LogGroup"] == {"Ref": LOG_GROUP}
    log_group = props(cfn, LOG_GROUP)
    assert log_group["LogGroupName"] == {"Fn::Sub": "/aws/lambda/" + FUNCTION_NAME["Fn::Sub"]}
    assert log_group["RetentionInDays"] == {"Ref": "LogRetentionDays"}


def test_the_handler_is_there_and_reads_what_the_template_sets() -> None:
    module, name = _handler_path()
    source = (REPO / Path(*module.split("."))).with_suffix(".py").read_text()
    assert re.search(rf"^(async )?def {name}\(|^{name}\s*=", source, re.M), f"no top-level {name} in {module}"
    code = _bot_code()
    assert '"SLACK_SECRET_ARN"' in code  # the secret's ARN, read at the first event
    assert '"AWS_LAMBDA_FUNCTION_NAME"' in code  # the function it invokes, which InvokeSelf names
    # What an EventBridge rule's event carries (a Schedule event, not ScheduleV2).
    assert '"aws.events"' in code and '"Scheduled Event"' in code


def _handler_path() -> tuple[str, str]:
    module, _, name = load_sam()["Resources"][FUNCTION]["Properties"]["Handler"].rpartition(".")
    return module, name


def _bot_code() -> str:
    return "\n".join(p.read_text() for d in ("bot", "graph_defs") for p in (REPO / d).rglob("*.py"))


def test_reserved_concurrency_is_unset_unless_asked_for(cfn: Template, sam: Template) -> None:
    parameter = sam["Parameters"]["ReservedConcurrency"]
    assert parameter["Default"] == ""
    assert not re.fullmatch(parameter["AllowedPattern"], "0")  # 0 would stop the bot
    assert re.fullmatch(parameter["AllowedPattern"], "50")
    assert props(cfn, FUNCTION)["ReservedConcurrentExecutions"] == {
        "Fn::If": ["HasReservedConcurrency", {"Ref": "ReservedConcurrency"}, {"Ref": "AWS::NoValue"}]
    }
    assert cfn["Conditions"]["HasReservedConcurrency"] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": "ReservedConcurrency"}, ""]}]
    }


def test_the_function_url_is_public_with_both_permissions_and_nothing_else_is(cfn: Template) -> None:
    urls = resources(cfn, "AWS::Lambda::Url")
    assert len(urls) == 1
    ((url_name, url),) = urls.items()
    assert url["Properties"]["AuthType"] == "NONE"  # Slack cannot sign with IAM; the code checks Slack's signature
    assert url["Properties"]["TargetFunctionArn"] == {"Ref": FUNCTION}
    public = [
        r["Properties"]
        for r in resources(cfn, "AWS::Lambda::Permission").values()
        if r["Properties"]["Principal"] == "*"
    ]
    # Since October 2025 a public URL needs both: InvokeFunctionUrl for auth type NONE,
    # and InvokeFunction restricted to calls through the URL.
    assert sorted(public, key=lambda p: str(p["Action"])) == [
        {
            "Action": "lambda:InvokeFunction",
            "FunctionName": {"Ref": FUNCTION},
            "Principal": "*",
            "InvokedViaFunctionUrl": True,
        },
        {
            "Action": "lambda:InvokeFunctionUrl",
            "FunctionName": {"Ref": FUNCTION},
            "Principal": "*",
            "FunctionUrlAuthType": "NONE",
        },
    ]
    assert cfn["Outputs"]["FunctionUrl"]["Value"] == {"Fn::GetAtt": [url_name, "FunctionUrl"]}
    request_url = cfn["Outputs"]["SlackRequestUrl"]["Value"]["Fn::Sub"]
    assert request_url == f"${{{url_name}.FunctionUrl}}slack/events"
    assert '"/slack/events"' in (REPO / "bot" / "server.py").read_text()  # the same path `serve` answers


def test_the_sweep_is_an_eventbridge_schedule(cfn: Template, sam: Template) -> None:
    events = sam["Resources"][FUNCTION]["Properties"]["Events"]
    assert [e["Type"] for e in events.values()] == ["Schedule"]  # an EventBridge rule, not ScheduleV2
    assert sam["Parameters"]["SweepSchedule"]["Default"] == "rate(1 minute)"
    rules = resources(cfn, "AWS::Events::Rule")
    assert len(rules) == 1 and not resources(cfn, "AWS::Scheduler::Schedule")
    ((rule_name, rule),) = rules.items()
    assert rule["Properties"]["ScheduleExpression"] == {"Ref": "SweepSchedule"}
    assert rule["Properties"]["State"] == "ENABLED"
    assert [t["Arn"] for t in rule["Properties"]["Targets"]] == [{"Fn::GetAtt": [FUNCTION, "Arn"]}]
    allowed = [
        r["Properties"]
        for r in resources(cfn, "AWS::Lambda::Permission").values()
        if r["Properties"]["Principal"] == "events.amazonaws.com"
    ]
    assert allowed == [
        {
            "Action": "lambda:InvokeFunction",
            "FunctionName": {"Ref": FUNCTION},
            "Principal": "events.amazonaws.com",
            "SourceArn": {"Fn::GetAtt": [rule_name, "Arn"]},
        }
    ]


def test_failed_async_invocations_go_to_an_encrypted_queue(cfn: Template) -> None:
    configs = resources(cfn, "AWS::Lambda::EventInvokeConfig")
    assert len(configs) == 1
    config = next(iter(configs.values()))["Properties"]
    assert config["FunctionName"] == {"Ref": FUNCTION}
    assert config["MaximumRetryAttempts"] == 1
    assert config["MaximumEventAgeInSeconds"] == 3600
    assert config["DestinationConfig"]["OnFailure"]["Destination"] == {"Fn::GetAtt": [QUEUE, "Arn"]}
    queue = props(cfn, QUEUE)
    assert queue["MessageRetentionPeriod"] == 14 * 24 * 3600
    assert queue.get("SqsManagedSseEnabled") is True or "KmsMasterKeyId" in queue
    assert cfn["Outputs"]["FailedInvocationsQueueUrl"]["Value"] == {"Ref": QUEUE}


# -- the environment and the secret -------------------------------------------------------


def _secret_settings() -> set[str]:
    """The environment names of every secret setting (``SecretStr`` fields of ``Settings``)."""
    names = set()
    for field in Settings.model_fields.values():
        if SecretStr in (field.annotation, *getattr(field.annotation, "__args__", ())):
            assert field.alias
            names.add(field.alias)
    return names


def test_the_slack_secrets_never_appear_as_plain_values(cfn: Template, sam: Template) -> None:
    secret_names = _secret_settings()
    assert secret_names == {"SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_APP_TOKEN"}
    env = props(cfn, FUNCTION)["Environment"]["Variables"]
    assert not secret_names & set(env), "a Slack secret is a plain environment variable"
    assert env["SLACK_SECRET_ARN"] == {"Ref": "SlackSecretArn"}
    parameter = sam["Parameters"]["SlackSecretArn"]
    assert "Default" not in parameter
    assert re.fullmatch(
        parameter["AllowedPattern"], "arn:aws:secretsmanager:us-east-1:123456789012:secret:slack-AbCdEf"
    )
    assert not re.fullmatch(parameter["AllowedPattern"], "xoxb-123-456-abc")
    for name, p in sam["Parameters"].items():
        assert not re.search(r"token|signing|password", name, re.I) or "Default" not in p, name
    text = TEMPLATE.read_text()
    assert not re.search(r"xox[abposr]-[0-9A-Za-z]", text), "something that looks like a Slack token"
    assert not resources(cfn, "AWS::SecretsManager::Secret")
    assert role_statements(cfn)["ReadSlackSecret"]["Resource"] == {"Ref": "SlackSecretArn"}


def test_the_environment_names_are_the_ones_the_code_reads(cfn: Template) -> None:
    env = props(cfn, FUNCTION)["Environment"]["Variables"]
    settings = {field.alias for field in Settings.model_fields.values()}
    assert env["DYNAMODB_TABLE"] == {"Ref": TABLE}
    assert env["SNAPSHOT_BUCKET"] == {"Ref": BUCKET}
    read_elsewhere = {"SLACK_SECRET_ARN", "LOG_LEVEL", "BEDROCK_MODEL_ID"}
    # AWS Lambda Powertools reads these itself (the metrics' namespace, the service name).
    read_by_powertools = {"POWERTOOLS_METRICS_NAMESPACE", "POWERTOOLS_SERVICE_NAME"}
    assert read_by_powertools <= set(env)
    assert set(env) - settings - read_by_powertools == read_elsewhere
    code = _bot_code()
    for name in read_elsewhere:
        assert f'"{name}"' in code, name


def test_the_example_graphs_are_off_unless_the_parameter_turns_them_on(cfn: Template, sam: Template) -> None:
    parameter = sam["Parameters"]["ExampleGraphs"]
    assert parameter["Default"] == "false"
    assert props(cfn, FUNCTION)["Environment"]["Variables"]["EXAMPLE_GRAPHS"] == {"Ref": "ExampleGraphs"}
    secrets = {"SLACK_BOT_TOKEN": SecretStr("x"), "SLACK_SIGNING_SECRET": SecretStr("y")}
    parsed = {value: Settings(**secrets, EXAMPLE_GRAPHS=value).example_graphs for value in parameter["AllowedValues"]}
    assert parsed == {"true": True, "false": False}


# -- the table and the bucket: what `approval-bot create-table` makes ---------------------


class _Waiter:
    def wait(self, **kwargs: Any) -> None:
        pass


class _RecordingDynamoDB:
    def __init__(self) -> None:
        self.calls: dict[str, Template] = {}

    def create_table(self, **kwargs: Any) -> Template:
        self.calls["create_table"] = kwargs
        return {}

    def get_waiter(self, name: str) -> _Waiter:
        return _Waiter()

    def describe_time_to_live(self, **kwargs: Any) -> Template:
        return {"TimeToLiveDescription": {"TimeToLiveStatus": "DISABLED"}}

    def update_time_to_live(self, **kwargs: Any) -> Template:
        self.calls["update_time_to_live"] = kwargs
        return {}

    def describe_table(self, **kwargs: Any) -> Template:
        return {"Table": {"GlobalSecondaryIndexes": self.calls["create_table"]["GlobalSecondaryIndexes"]}}


class _Meta:
    region_name = "us-east-1"


class _RecordingS3:
    meta = _Meta()

    def __init__(self) -> None:
        self.calls: dict[str, Template] = {}

    def head_bucket(self, **kwargs: Any) -> None:
        raise ClientError({"Error": {"Code": "404"}}, "HeadBucket")

    def __getattr__(self, method: str) -> Any:
        def record(**kwargs: Any) -> Template:
            self.calls[method] = kwargs
            return {}

        return record


@pytest.fixture(scope="module")
def made_by_create_table() -> Iterator[tuple[_RecordingDynamoDB, _RecordingS3]]:
    ddb, s3 = _RecordingDynamoDB(), _RecordingS3()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(aws, "dynamodb_client", lambda: ddb)
        mp.setattr(aws, "s3_client", lambda: s3)
        aws.create_table(table="runs", bucket="states")
    yield ddb, s3


def _by_name(items: list[Template], key: str) -> dict[str, Template]:
    return {item[key]: item for item in items}


def test_the_table_is_the_one_create_table_makes(
    cfn: Template, made_by_create_table: tuple[_RecordingDynamoDB, _RecordingS3]
) -> None:
    ddb, _ = made_by_create_table
    made = ddb.calls["create_table"]
    table = props(cfn, TABLE)
    assert table["BillingMode"] == made["BillingMode"] == "PAY_PER_REQUEST"
    assert _by_name(table["AttributeDefinitions"], "AttributeName") == _by_name(
        made["AttributeDefinitions"], "AttributeName"
    )
    assert table["KeySchema"] == made["KeySchema"]
    assert table["GlobalSecondaryIndexes"] == made["GlobalSecondaryIndexes"]
    assert [i["IndexName"] for i in table["GlobalSecondaryIndexes"]] == [
        aws.SWEEP_INDEX,
        aws.CHANNEL_INDEX,
        aws.STARTER_INDEX,
    ]
    assert table["TimeToLiveSpecification"] == ddb.calls["update_time_to_live"]["TimeToLiveSpecification"]
    assert table["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert table["SSESpecification"]["SSEEnabled"] is True
    assert "TableName" not in table  # a generated name: a retained table never blocks a new stack
    assert cfn["Outputs"]["RunsTableName"]["Value"] == {"Ref": TABLE}


def test_the_bucket_is_private_encrypted_and_expires_leftovers_like_create_table(
    cfn: Template, made_by_create_table: tuple[_RecordingDynamoDB, _RecordingS3]
) -> None:
    _, s3 = made_by_create_table
    bucket = props(cfn, BUCKET)
    assert (
        bucket["PublicAccessBlockConfiguration"]
        == s3.calls["put_public_access_block"]["PublicAccessBlockConfiguration"]
    )
    assert all(bucket["PublicAccessBlockConfiguration"].values())
    assert bucket["OwnershipControls"] == {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]}
    (encryption,) = bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert encryption["ServerSideEncryptionByDefault"]["SSEAlgorithm"] in ("AES256", "aws:kms")
    (made,) = s3.calls["put_bucket_lifecycle_configuration"]["LifecycleConfiguration"]["Rules"]
    (rule,) = bucket["LifecycleConfiguration"]["Rules"]
    assert rule["Id"] == made["ID"]
    assert rule["Status"] == made["Status"] == "Enabled"
    assert rule["Prefix"] == made["Filter"]["Prefix"] == aws.STATE_PREFIX
    assert rule["ExpirationInDays"] == made["Expiration"]["Days"] == aws.STATE_EXPIRY_DAYS
    assert rule["AbortIncompleteMultipartUpload"] == made["AbortIncompleteMultipartUpload"]
    assert "VersioningConfiguration" not in bucket  # superseded states are deleted on purpose
    assert "BucketName" not in bucket
    assert cfn["Outputs"]["SnapshotBucketName"]["Value"] == {"Ref": BUCKET}


def test_the_bucket_refuses_plain_http(cfn: Template) -> None:
    (policy,) = resources(cfn, "AWS::S3::BucketPolicy").values()
    assert policy["Properties"]["Bucket"] == {"Ref": BUCKET}
    (statement,) = policy["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Effect"] == "Deny" and statement["Principal"] == "*" and statement["Action"] == "s3:*"
    assert statement["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    assert statement["Resource"] == [{"Fn::GetAtt": [BUCKET, "Arn"]}, {"Fn::Sub": f"${{{BUCKET}.Arn}}/*"}]


@pytest.mark.parametrize("name", [TABLE, BUCKET, "SnapshotBucketPolicy"])
def test_stored_data_outlives_the_stack(cfn: Template, name: str) -> None:
    resource = cfn["Resources"][name]
    assert resource["DeletionPolicy"] == "Retain"
    assert resource["UpdateReplacePolicy"] == "Retain"


# -- cfn-lint -------------------------------------------------------------------------------


def test_cfn_lint_passes() -> None:
    beside_python = Path(sys.executable).parent / "cfn-lint"
    executable = str(beside_python) if beside_python.exists() else shutil.which("cfn-lint")
    if executable is None:
        pytest.skip("cfn-lint is not installed (pip install -e '.[dev]' installs it)")
    done = subprocess.run(
        [executable, str(TEMPLATE)], cwd=REPO, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
