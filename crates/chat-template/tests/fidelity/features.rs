//! One small template per Jinja feature that chat templates use, each with the text it
//! must give, checked against the reference too.

use super::{ours, reference, Outcome};
use serde_json::{json, Value};

fn cases() -> Vec<(&'static str, &'static str, Value, &'static str)> {
    let none = json!({});
    vec![
        ("trim_blocks", "{% if true %}\na\n{% endif %}\nb", none.clone(), "a\nb"),
        ("lstrip_blocks", "x\n    {% if true %}\n    y\n    {% endif %}\n", none.clone(), "x\n    y\n"),
        ("whitespace control", "a  {{- ' b ' -}}  c", none.clone(), "a b c"),
        ("no trailing newline", "a\n", none.clone(), "a"),
        ("generation block", "{% generation %}\nhi{% endgeneration %}!", none.clone(), "hi!"),
        ("generation block trimmed", "a {%- generation -%} b {%- endgeneration -%} c", none.clone(), "abc"),
        ("raise_exception", "{{ raise_exception('Only user and assistant roles are supported!') }}", none.clone(), "!Only user and assistant roles are supported!"),
        ("strftime_now", "{{ strftime_now('%d %b %Y') }}", none.clone(), "14 Nov 2023"),
        ("tojson default", "{{ x | tojson }}", json!({"x": {"b": [1, 2.5, true, null], "a": "é\"<>&'"}}), "{\"b\": [1, 2.5, true, null], \"a\": \"é\\\"<>&'\"}"),
        ("tojson indent", "{{ x | tojson(indent=2) }}", json!({"x": {"b": [1, {}], "a": []}}), "{\n  \"b\": [\n    1,\n    {}\n  ],\n  \"a\": []\n}"),
        ("tojson ensure_ascii", "{{ 'é\n' | tojson(ensure_ascii=True) }}", none.clone(), "\"\\u00e9\\n\""),
        ("tojson sort_keys", "{{ {'b': 1, 'a': 2} | tojson(sort_keys=True) }}", none.clone(), "{\"a\": 2, \"b\": 1}"),
        ("tojson separators", "{{ [1, {'a': 2}] | tojson(separators=(',', ':')) }}", none.clone(), "[1,{\"a\":2}]"),
        ("tojson floats", "{{ [1.0, 0.1, 1e20, 3] | tojson }}", none.clone(), "[1.0, 0.1, 1e+20, 3]"),
        ("loop controls", "{% for i in range(6) %}{% if i == 1 %}{% continue %}{% endif %}{% if i == 4 %}{% break %}{% endif %}{{ i }}{% endfor %}", none.clone(), "023"),
        ("namespace", "{% set ns = namespace(n=0) %}{% for i in [1, 2, 3] %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}", none.clone(), "6"),
        ("loop variables", "{% for x in ['a', 'b', 'c'] %}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}", none.clone(), "0TrueFalse3;1FalseFalse3;2FalseTrue3;"),
        ("python printing", "{{ true }} {{ none }} {{ 1.0 }} {{ 2 }} {{ [1, 'a', none] }} {{ {'k': false} }} {{ none | string }}", none.clone(), "True None 1.0 2 [1, 'a', None] {'k': False} None"),
        ("undefined", "[{{ missing }}]{% if not missing %}falsy{% endif %}{% if missing is defined %}defined{% endif %}", none.clone(), "[]falsy"),
        ("undefined attribute raises", "{{ missing.attr }}", none.clone(), "!"),
        ("python type tests", "{% for v in [none, 1, 1.5, true, 's', [1], {'a': 1}, u] %}{{ v is defined }}{{ v is none }}{{ v is string }}{{ v is mapping }}{{ v is sequence }}{{ v is iterable }}{{ v is number }}{{ v is integer }}{{ v is float }}{{ v is boolean }};{% endfor %}", none.clone(), "TrueTrueFalseFalseFalseFalseFalseFalseFalseFalse;TrueFalseFalseFalseFalseFalseTrueTrueFalseFalse;TrueFalseFalseFalseFalseFalseTrueFalseTrueFalse;TrueFalseFalseFalseFalseFalseTrueFalseFalseTrue;TrueFalseTrueFalseTrueTrueFalseFalseFalseFalse;TrueFalseFalseFalseTrueTrueFalseFalseFalseFalse;TrueFalseFalseTrueTrueTrueFalseFalseFalseFalse;FalseFalseFalseFalseTrueTrueFalseFalseFalseFalse;"),
        ("tests", "{{ 'a' is string }}{{ {} is mapping }}{{ [] is sequence }}{{ 'a' is iterable }}{{ none is none }}{{ 3 is number }}", none.clone(), "TrueTrueTrueTrueTrueTrue"),
        ("string methods", "{{ ' a,b '.strip() }}|{{ 'xxaxx'.strip('x') }}|{{ 'a,b'.split(',') }}|{{ 'ab\n'.rstrip() }}|{{ '--a'.lstrip('-') }}|{{ 'abc'.startswith(('x', 'a')) }}|{{ 'abc'.endswith('c') }}|{{ 'aXa'.replace('X', 'b') }}|{{ 'hello world'.title() }}|{{ 'a'.upper() }}{{ 'B'.lower() }}|{{ 'banana'.count('a') }}|{{ 'banana'.find('n') }}|{{ '-'.join(['a', 'b']) }}", none.clone(), "a,b|a|['a', 'b']|ab|a|True|True|aba|Hello World|Ab|3|2|a-b"),
        ("more string methods", "{{ 'a,b,c'.rsplit(',', 1) }}|{{ ' a b  c '.rsplit(None, 1) }}|{{ 'a=b=c'.partition('=')[2] }}|{{ 'a=b=c'.rpartition('=')[0] }}|{{ 'éabc'.index('b') }}|{{ [1, 2, 3].index(2) }}|{{ 'pre-x'.removeprefix('pre-') }}|{{ 'x.py'.removesuffix('.py') }}|{{ '-5'.zfill(4) }}|{{ 'a'.ljust(3, '.') }}|{{ 'a'.rjust(3) }}|{{ 'ab'.center(5, '*') }}|{{ 'a'.center(4, '*') }}|{{ 'aB'.swapcase() }}", none.clone(), "['a,b', 'c']|[' a b', 'c']|b=c|a=b|2|1|x|x|-005|a..|  a|**ab*|*a**|Ab"),
        ("dict methods", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{{ d.keys() | list }}{{ d.values() | list }}{{ d.get('a') }}{{ d.get('z', 'none') }}", json!({"d": {"b": 1, "a": 2}}), "b=1;a=2;['b', 'a'][1, 2]2none"),
        ("filters", "{{ [1, 2] | length }}|{{ ' x ' | trim }}|{% for k, v in d | items %}{{ k }}{{ v }}{% endfor %}|{{ m | map(attribute='n') | join(',') }}|{{ m | selectattr('n', 'equalto', 2) | list | length }}|{{ [1, 2, 3] | reject('equalto', 2) | list }}|{{ [1, 2] | first }}{{ [1, 2] | last }}|{{ u | default('d') }}|{{ '3' | int + 1 }}|{{ 'ab' | list }}", json!({"d": {"a": 1}, "m": [{"n": 1}, {"n": 2}]}), "2|x|a1|1,2|1|[1, 3]|12|d|4|['a', 'b']"),
        ("slices and membership", "{{ messages[1:] | length }}{{ messages[-1].role }}{{ 'user' in ['user'] }}{{ 'x' not in 'abc' }}", json!({"messages": [{"role": "system"}, {"role": "user"}]}), "1userTrueTrue"),
        ("macros", "{% macro m(x, y='d') %}<{{ x }}{{ y }}>{% endmacro %}{{ m(1) }}{{ m(2, y='e') }}", none.clone(), "<1d><2e>"),
        ("set block", "{% set x %}a{{ 1 }}{% endset %}{{ x }}", none.clone(), "a1"),
    ]
}

#[test]
fn every_feature_renders_as_expected_and_as_the_reference() {
    let cases = cases();
    let requests: Vec<(String, Value)> = cases
        .iter()
        .map(|(_, template, context, _)| (template.to_string(), context.clone()))
        .collect();
    let references = reference(&requests);
    let mut failures = Vec::new();
    for ((name, template, context, expected), reference) in cases.iter().zip(references) {
        let got = ours(template, context);
        // "!" starts an expected failure: "!" alone for any message.
        let expected_ok = match expected.strip_prefix('!') {
            Some("") => matches!(got, Outcome::Failed(_)),
            Some(message) => got == Outcome::Raised(message.to_string()),
            None => got == Outcome::Text(expected.to_string()),
        };
        if !expected_ok {
            failures.push(format!("{name}: expected {expected:?}, got {got:?}"));
        }
        if !got.agrees_with(&reference) {
            failures.push(format!("{name}: reference {reference:?}, got {got:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
