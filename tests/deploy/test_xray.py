"""X-Ray on Lambda is opt-in: the ``XRayTracing`` parameter turns on the function's active
tracing and, only then, the one grant it needs (docs/traces.md)."""

from __future__ import annotations

from tests.deploy.test_template import FUNCTION, ROLE, Template, load_sam, props, render


def test_xray_tracing_is_off_unless_the_parameter_turns_it_on() -> None:
    sam = load_sam()
    assert sam["Parameters"]["XRayTracing"]["Default"] == "false"
    cfn = render(sam)
    assert cfn["Conditions"]["TracesToXRay"] == {"Fn::Equals": [{"Ref": "XRayTracing"}, "true"]}
    assert props(cfn, FUNCTION)["TracingConfig"] == {"Mode": {"Fn::If": ["TracesToXRay", "Active", "PassThrough"]}}
    grant: Template = cfn["Resources"]["XRayTraces"]
    assert grant["Condition"] == "TracesToXRay", "the role may write traces only when tracing is on"
    assert grant["Properties"]["Roles"] == [{"Ref": ROLE}]
    (statement,) = grant["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Action"] == ["xray:PutTraceSegments", "xray:PutTelemetryRecords"]
