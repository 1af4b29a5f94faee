"""Every SQL statement lives in warehouse/: tasks/ and flows/ only call its functions.

Checked on the source with `ast`: no `.execute(` / `.executemany(` / `.sql(` call on anything, no
`db.query(` / `query(` with literal SQL (the one call allowed is `kbflow sql` running the user's own
query), and no string literal in tasks/ that starts like a statement (docstrings are prose).
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
STATEMENT = re.compile(r"\s*(SELECT|INSERT|DELETE|UPDATE|CREATE|WITH)\b", re.IGNORECASE)
EXECUTING = {"execute", "executemany", "sql"}
# (module, the SQL argument): `kbflow sql` passes the user's query through
USER_SQL = [("flows/cli.py", "args.query")]


def modules(*folders: str) -> list[tuple[str, ast.Module]]:
    found = [path for folder in folders for path in sorted((REPO / folder).rglob("*.py"))]
    assert found, folders
    return [(path.relative_to(REPO).as_posix(), ast.parse(path.read_text(encoding="utf-8"), str(path)))
            for path in found]


def executing_calls(tree: ast.Module) -> list[str]:
    calls = [n for n in ast.walk(tree)
             if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in EXECUTING]
    return [f"line {n.lineno}: {ast.unparse(n.func)}(…)" for n in sorted(calls, key=lambda n: n.lineno)]


def _is_db_query(func: ast.expr) -> bool:
    if isinstance(func, ast.Name):
        return func.id == "query"
    return isinstance(func, ast.Attribute) and func.attr == "query" and isinstance(func.value, ast.Name) \
        and func.value.id == "db"


def query_sql_arguments(tree: ast.Module) -> list[ast.expr]:
    """The SQL argument (second positional, or `sql=`) of every `db.query(…)` / `query(…)` call."""
    out = []
    for n in sorted(ast.walk(tree), key=lambda n: getattr(n, "lineno", 0)):
        if isinstance(n, ast.Call) and _is_db_query(n.func):
            sql = n.args[1] if len(n.args) > 1 else next((k.value for k in n.keywords if k.arg == "sql"), None)
            assert sql is not None, f"line {n.lineno}: {ast.unparse(n)} has no SQL argument"
            out.append(sql)
    return out


def has_literal_text(node: ast.expr) -> bool:
    return any(isinstance(n, ast.JoinedStr) or (isinstance(n, ast.Constant) and isinstance(n.value, str))
               for n in ast.walk(node))


def statement_literals(tree: ast.Module) -> list[str]:
    """String literals (not docstrings) that start like a SQL statement; an f-string by its leading text."""
    skip: set[int] = set()
    for n in ast.walk(tree):
        body = getattr(n, "body", None)
        if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body \
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            skip.add(id(body[0].value))
        if isinstance(n, ast.JoinedStr):
            skip.update(id(v) for v in n.values[1:])  # text after a placeholder does not start the string
    found = [n for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
             and id(n) not in skip and STATEMENT.match(n.value)]
    return [f"line {n.lineno}: {n.value[:60]!r}" for n in sorted(found, key=lambda n: (n.lineno, n.col_offset))]


def test_tasks_and_flows_execute_no_sql():
    found = {module: calls for module, tree in modules("tasks", "flows") if (calls := executing_calls(tree))}
    assert found == {}, f"SQL executed outside warehouse/: {found}"


def test_only_the_users_own_query_goes_through_db_query():
    calls = [(module, ast.unparse(sql)) for module, tree in modules("tasks", "flows")
             for sql in query_sql_arguments(tree)]
    assert calls == USER_SQL
    for module, tree in modules("tasks", "flows"):
        for sql in query_sql_arguments(tree):
            assert not has_literal_text(sql), f"{module} line {sql.lineno}: literal SQL {ast.unparse(sql)}"


def test_no_sql_text_in_tasks():
    found = {module: texts for module, tree in modules("tasks") if (texts := statement_literals(tree))}
    assert found == {}, f"SQL text in tasks/ (move it into a warehouse/ function): {found}"


def test_the_checks_catch_what_they_look_for():
    tree = ast.parse('''
"""SELECT in a docstring is prose."""
def f(con, db, query, kb, user):
    """Delete what is stale."""
    con.execute("DELETE FROM chunks")
    con.sql(f"SELECT {kb}")
    db.query(path, "  select 1")
    db.query(path, f"WITH x AS (SELECT 1) SELECT * FROM x WHERE kb = '{kb}'")
    query(path, sql="update t set a = 1")
    db.query(path, user)
    note = f"{kb} with gold evidence"
    return "Insert " + "nothing"
''')
    assert executing_calls(tree) == ["line 5: con.execute(…)", "line 6: con.sql(…)"]
    assert [has_literal_text(sql) for sql in query_sql_arguments(tree)] == [True, True, True, False]
    assert [text.split(":")[0] for text in statement_literals(tree)] == [
        "line 5", "line 6", "line 7", "line 8", "line 9", "line 12"]
