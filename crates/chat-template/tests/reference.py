#!/usr/bin/env python3
"""Reference renderer for the chat-template tests: renders a chat template the way
Hugging Face transformers' apply_chat_template does (jinja2's immutable sandbox with
trim_blocks, lstrip_blocks and loop controls; tojson, raise_exception and strftime_now
as transformers defines them; `{% generation %}` blocks rendered as plain content).

Reads a JSON request on stdin: {"template": SOURCE, "context": {...}}. Prints the
render on stdout with nothing added; on a template error prints "error: MESSAGE" on
stderr and exits 2. A JSON list of requests is answered with a JSON list of
{"ok": RENDER}, {"raised": MESSAGE} (the template's raise_exception) or
{"error": MESSAGE} (any other failure), one per request.
"""

import json
import os
import sys
from datetime import datetime, timezone

try:
    import jinja2
    from jinja2.ext import Extension
    from jinja2.sandbox import ImmutableSandboxedEnvironment
except ImportError:
    sys.stderr.write("reference.py needs the Python package jinja2 (pip install jinja2)\n")
    sys.exit(3)


class GenerationBlocks(Extension):
    """`{% generation %}...{% endgeneration %}`: the body rendered as it is."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.Scope(body, lineno=lineno)


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(
        x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )


def strftime_now(fmt):
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch is not None:
        return datetime.fromtimestamp(int(epoch), tz=timezone.utc).strftime(fmt)
    return datetime.now().strftime(fmt)


def render(request):
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=[GenerationBlocks, jinja2.ext.loopcontrols],
    )
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env.from_string(request["template"]).render(**request["context"])


def main():
    request = json.load(sys.stdin)
    if isinstance(request, list):
        results = []
        for one in request:
            try:
                results.append({"ok": render(one)})
            except Exception as error:  # the template's own failure is the result
                kind = "raised" if type(error) is jinja2.exceptions.TemplateError else "error"
                results.append({kind: str(error)})
        sys.stdout.write(json.dumps(results))
        return
    try:
        rendered = render(request)
    except Exception as error:  # the template's own failure is the result
        sys.stderr.write(f"error: {error}\n")
        sys.exit(2)
    sys.stdout.write(rendered)


if __name__ == "__main__":
    main()
