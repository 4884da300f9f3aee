"""The cold-start bench starts each side the way it is deployed, Slack's secrets included.

``template.yaml`` gives our function only ``SLACK_SECRET_ARN``, so a deployed container's
init phase makes a Secrets Manager client and waits for one round trip before the runtime
exists; Slack waits for that on a cold start. Bolt's guide has the token and signing secret
as plain environment variables. A bench that handed ours the plain variables would leave
the read out of our wall time and flatter its ratio. So the rig serves the secret from a
moto server, ours gets the ARN and no plain secret, and every cold start of ours must have
read it (``--plain-secrets`` keeps the old mode, said so in the report).
"""

from __future__ import annotations

from pathlib import Path

import yaml

from bench.cold_start import PLAIN_SLACK_SECRETS, child_env, cold_start_rig, side_envs

REPO = Path(__file__).resolve().parents[2]


def _function_env() -> dict[str, object]:
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("!", lambda loader, suffix, node: None)  # CloudFormation's short forms
    template = yaml.load((REPO / "template.yaml").read_text(), Loader=Loader)  # a SafeLoader subclass
    functions = [r for r in template["Resources"].values() if r["Type"] == "AWS::Serverless::Function"]
    env: dict[str, object] = {}
    for source in (template.get("Globals", {}).get("Function", {}), *(f["Properties"] for f in functions)):
        env |= source.get("Environment", {}).get("Variables", {})
    return env


def test_ours_gets_the_secrets_arn_and_the_bare_app_the_guides_plain_variables() -> None:
    deployed = _function_env()
    assert "SLACK_SECRET_ARN" in deployed and not set(PLAIN_SLACK_SECRETS) & set(deployed), deployed
    base = child_env(slack_api_url="http://127.0.0.1:1/api/", bot_token="xoxb-1", signing_secret="s" * 32, extra={})
    secret = {"SLACK_SECRET_ARN": "arn:aws:secretsmanager:eu-west-1:123456789012:secret:slack-AbCdEf"}
    envs = side_envs(base=base, secret_env=secret, bare_auth="guide")
    assert envs["ours"]["SLACK_SECRET_ARN"] == secret["SLACK_SECRET_ARN"]
    assert not set(PLAIN_SLACK_SECRETS) & set(envs["ours"]), "ours would not need the secret's read"
    assert envs["baseline"]["SLACK_BOT_TOKEN"] == "xoxb-1" and "SLACK_SECRET_ARN" not in envs["baseline"]
    plain = side_envs(base=base, secret_env=None, bare_auth="guide")  # --plain-secrets
    assert plain["ours"]["SLACK_BOT_TOKEN"] == "xoxb-1" and "SLACK_SECRET_ARN" not in plain["ours"]


async def test_a_cold_start_of_ours_reads_the_secret_and_one_of_the_bare_app_does_not() -> None:
    async with cold_start_rig() as rig:
        ours, _ = await rig.one("ours")  # raises unless it read the secret and acked a signed request
        bare, _ = await rig.one("baseline")
    assert rig.secret_reads == {"ours": 1, "baseline": 0}
    assert "secretsmanager" in ours.service_models and "secretsmanager" not in bare.service_models
    assert not set(PLAIN_SLACK_SECRETS) & set(rig.sides["ours"][1])
