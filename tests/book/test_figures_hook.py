"""Tests of the book's figures hook (book/hooks/figures.py): placeholders resolve from results
files, a missing file or key fails naming it, a figure typed by hand fails, and code, inline
code and snippet lines are left alone. The last tests build a small MkDocs site with the hook.

Run by ctest (label `book`) with scripts/setup's Python, or directly:
`.tools/venv/bin/python tests/book/test_figures_hook.py`. Exits 77 (skipped) without MkDocs.
"""

import importlib.util
import subprocess
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path

HOOK = Path(__file__).resolve().parents[2] / "book" / "hooks" / "figures.py"

try:
    import mkdocs  # noqa: F401  (the hook raises MkDocs' PluginError)
except ImportError:
    print("skipped: MkDocs is not installed for this Python (run scripts/setup)")
    sys.exit(77)


def load_hook():
    """The hook module, loaded from its file as MkDocs loads it."""
    spec = importlib.util.spec_from_file_location("figures_hook", HOOK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


figures = load_hook()

RESULTS_MD = """\
# Loader benchmark results

## Figures

| workload | stoke | PyTorch DataLoader |
| --- | ---: | ---: |
| overhead, ns per item | 42.6 | 2,209.9 |
| first batch, ms | 0.044 | 107.1 |

## Ratios

| ratio | value | target |
| --- | ---: | --- |
| `image_vs_pytorch_w2` | 18.380 | >= 10 |
"""

RESULTS_TXT = """\
$ build/default/bench/shard_bench
stoke, tar shards, 2 threads              57957 images/s  first batch 4.8 ms
stoke, tar shards, 2 threads, reduced     53331 images/s  first batch 4.6 ms
all ranks read 2.10 x the bytes (shards rank split)
all ranks read 3.53 x the bytes (interleaved rank split)
ratio shard_split_bytes_per_epoch: 1.167
"""


class Site:
    """A repository root in a temporary folder, with results files and a book folder."""

    def __init__(self):
        self.folder = tempfile.TemporaryDirectory()
        self.root = Path(self.folder.name)
        (self.root / "results").mkdir()
        (self.root / "results" / "RESULTS.md").write_text(RESULTS_MD)
        (self.root / "results" / "bench.txt").write_text(RESULTS_TXT)
        (self.root / "results" / "layout.json").write_text('{"scenarios": [{"samples": 10}]}')

    def problems(self, page, meta=None):
        """The page with its placeholders resolved, and the hook's messages about it."""
        return figures.page_problems(textwrap.dedent(page), meta or {}, self.root, "page.md")


class SiteTestCase(unittest.TestCase):
    """A test with a fresh `Site` in `self.site`, removed after it."""

    def setUp(self):
        self.site = Site()
        self.addCleanup(self.site.folder.cleanup)


class Placeholders(SiteTestCase):
    """`figure` and `table` placeholders become the values of results files."""

    def resolved(self, placeholder):
        markdown, messages = self.site.problems(placeholder)
        self.assertEqual(messages, [])
        return markdown

    def test_a_ratio_row_of_a_markdown_table_resolves(self):
        self.assertEqual(
            self.resolved('{{ figure("results/RESULTS.md", "image_vs_pytorch_w2") }}x'), "18.380x")

    def test_a_cell_is_picked_by_row_and_column(self):
        placeholder = ('{{ figure("results/RESULTS.md", "overhead, ns per item", '
                       '"PyTorch DataLoader") }}')
        self.assertEqual(self.resolved(placeholder), "2,209.9")

    def test_digits_and_scale_format_the_value(self):
        rounded = ('{{ figure("results/RESULTS.md", "overhead, ns per item", '
                   '"PyTorch DataLoader", digits=0) }}')
        self.assertEqual(self.resolved(rounded), "2,210")
        scaled = '{{ figure("results/RESULTS.md", "first batch, ms", scale=1000, digits=0) }} us'
        self.assertEqual(self.resolved(scaled), "44 us")

    def test_a_ratio_line_resolves(self):
        self.assertEqual(
            self.resolved('{{ figure("results/bench.txt", "ratio shard_split_bytes_per_epoch") }}'),
            "1.167")

    def test_a_text_table_column_is_picked_by_a_pattern(self):
        placeholder = ('{{ figure("results/bench.txt", "stoke, tar shards, 2 threads", '
                       '"first batch {} ms") }}')
        self.assertEqual(self.resolved(placeholder), "4.8")

    def test_a_pattern_tells_lines_with_the_same_beginning_apart(self):
        placeholder = ('{{ figure("results/bench.txt", "all ranks read", '
                       '"{} x the bytes (interleaved rank split)") }}')
        self.assertEqual(self.resolved(placeholder), "3.53")

    def test_a_json_path_resolves(self):
        self.assertEqual(
            self.resolved('{{ figure("results/layout.json", "scenarios.0.samples") }}'), "10")

    def test_a_table_is_included_under_its_heading(self):
        markdown = self.resolved('{{ table("results/RESULTS.md", "Ratios") }}')
        self.assertEqual(markdown.splitlines()[0], "| ratio | value | target |")
        self.assertIn("| `image_vs_pytorch_w2` | 18.380 | >= 10 |", markdown)
        self.assertNotIn("overhead", markdown)


class FailingPlaceholders(SiteTestCase):
    """A placeholder that names no value fails, naming the page, the line, the file and key."""

    def only_message(self, page):
        _, messages = self.site.problems(page)
        self.assertEqual(len(messages), 1, messages)
        return messages[0]

    def test_a_missing_key_fails_naming_page_line_file_and_key(self):
        page = 'Intro.\n\nIt took {{ figure("results/bench.txt", "ratio nope") }}.\n'
        message = self.only_message(page)
        self.assertTrue(message.startswith("page.md:3: "), message)
        self.assertIn("results/bench.txt", message)
        self.assertIn("'ratio nope'", message)

    def test_a_missing_column_fails_naming_it(self):
        message = self.only_message(
            '{{ figure("results/RESULTS.md", "overhead, ns per item", "libtorch") }}')
        self.assertIn("no column 'libtorch'", message)

    def test_a_missing_file_fails_naming_it(self):
        message = self.only_message('{{ figure("results/gone.txt", "ratio x") }}')
        self.assertIn("'results/gone.txt' does not exist", message)

    def test_an_ambiguous_row_fails_naming_the_lines(self):
        message = self.only_message('{{ figure("results/bench.txt", "all ranks read") }}')
        self.assertIn("on 2 lines (4, 5)", message)

    def test_a_missing_heading_fails_naming_it(self):
        message = self.only_message('{{ table("results/RESULTS.md", "Memory") }}')
        self.assertIn("no heading 'Memory'", message)


class HandTypedFigures(SiteTestCase):
    """A number with a unit in prose fails; code, snippets and listed constants do not."""

    def test_figures_with_units_in_prose_fail_naming_line_and_figure(self):
        page = """\
        # Results

        The first batch took 0.65 ms, 135x sooner; two workers made 401,872 samples/s.
        It used 60 MiB, 5% of the time.
        """
        _, messages = self.site.problems(page)
        self.assertEqual(messages, [
            "page.md:3: '0.65 ms' is a figure typed by hand",
            "page.md:3: '135x' is a figure typed by hand",
            "page.md:3: '401,872 samples/s' is a figure typed by hand",
            "page.md:4: '60 MiB' is a figure typed by hand",
            "page.md:4: '5%' is a figure typed by hand",
        ])

    def test_numbers_without_units_and_dimensions_pass(self):
        page = "Batches of 256 images of 3x64x64 bytes, 2 x 60000 samples, 2^28 pixels, v2.\n"
        self.assertEqual(self.site.problems(page)[1], [])

    def test_code_inline_code_and_snippet_lines_are_ignored(self):
        page = """\
        The step is `2 ms` long.

        ```text
        throughput: 742402 samples/s (0.162 s)
        ```

        !!! note
            ~~~
            took 3.7 s
            ~~~

        --8<-- "results/bench.txt"
        <!-- measured 4.8 ms once -->
        """
        self.assertEqual(self.site.problems(page)[1], [])

    def test_a_placeholder_followed_by_its_unit_passes(self):
        page = 'The ratio is {{ figure("results/RESULTS.md", "image_vs_pytorch_w2") }}x.\n'
        self.assertEqual(self.site.problems(page)[1], [])

    def test_a_listed_constant_passes_and_an_unused_one_fails(self):
        page = "The bound allows 64 MiB more.\n"
        listed = {"constants": {"64 MiB": "the allowance of the bound"}}
        self.assertEqual(self.site.problems(page, listed)[1], [])
        stale = {"constants": {"64 MiB": "the allowance", "8 GB": "a billion indices"}}
        self.assertEqual(self.site.problems(page, stale)[1],
                         ["page.md: constant '8 GB' is listed but not in the prose"])


class Build(unittest.TestCase):
    """`mkdocs build --strict` with the hook: a hand-typed figure fails it, placeholders pass."""

    def build(self, page):
        """The exit status and output of building a site whose one page is `page`."""
        site = Site()
        self.addCleanup(site.folder.cleanup)
        book = site.root / "book"
        (book / "docs").mkdir(parents=True)
        (book / "docs" / "index.md").write_text(page)
        (book / "mkdocs.yml").write_text(textwrap.dedent(f"""\
            site_name: test
            theme:
              name: mkdocs
            hooks:
              - {HOOK}
            """))
        run = subprocess.run(
            [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(book / "mkdocs.yml")],
            capture_output=True, text=True,
            env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"})
        return run.returncode, run.stdout + run.stderr, book

    def test_a_hand_typed_figure_fails_the_build(self):
        status, output, _ = self.build("# Page\n\nIt took 3.7 s.\n")
        self.assertNotEqual(status, 0, output)
        self.assertIn("book/docs/index.md:3: '3.7 s' is a figure typed by hand", output)

    def test_lines_are_counted_in_the_file_front_matter_included(self):
        page = ("---\nconstants:\n  64 MiB: an allowance\n---\n\n"
                "# Page\n\nIt took 3.7 s, plus 64 MiB.\n")
        status, output, _ = self.build(page)
        self.assertNotEqual(status, 0, output)
        self.assertIn("book/docs/index.md:8: '3.7 s' is a figure typed by hand", output)
        self.assertNotIn("64 MiB' is a figure", output)

    def test_a_page_with_placeholders_builds(self):
        page = ('# Page\n\nShards: '
                '{{ figure("results/bench.txt", "ratio shard_split_bytes_per_epoch") }}x.\n')
        status, output, book = self.build(page)
        self.assertEqual(status, 0, output)
        self.assertIn("Shards: 1.167x.", (book / "site" / "index.html").read_text())


if __name__ == "__main__":
    unittest.main()
