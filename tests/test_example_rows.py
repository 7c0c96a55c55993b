"""The examples table's row is keyed by column: a value left out, or one too many, is an error naming the column
(a positional row zipped with the column names once shifted every later column when one value was missing)."""

import dataclasses

import pytest

from conformance.store.example_columns import ITEM_COLUMNS, ROW_COLUMNS, ExampleRow, item_values
from conformance.store.example_writer import ExamplesWriter
from conformance.store.examples import read_table

ROW = dict.fromkeys(ROW_COLUMNS) | {"phase": "generate", "example": 0, "case": "{}", "verdict": "pass"}
ITEM = dict.fromkeys(ITEM_COLUMNS, "x") | {"virtual": False, "pid": 1}


def test_a_row_written_by_column_reads_back_by_column(tmp_path):
    writer = ExamplesWriter(tmp_path, "main")
    writer.begin_item(ITEM)
    writer.add(ExampleRow(**ROW | {"max_abs": 2.5, "tolerance": "uint8"}))
    writer.close()
    table, _ = read_table(tmp_path)
    row = table.to_pylist()[0]
    assert row["max_abs"] == 2.5 and row["tolerance"] == "uint8" and row["verdict"] == "pass"
    assert row["nodeid"] == "x" and row["virtual"] is False


@pytest.mark.parametrize("dropped", ["psnr", "detail", "phase"])
def test_a_row_missing_one_value_fails_naming_the_column(dropped):
    with pytest.raises(TypeError, match=f"'{dropped}'"):
        ExampleRow(**{k: v for k, v in ROW.items() if k != dropped})


def test_a_row_with_a_value_too_many_fails_naming_it():
    with pytest.raises(TypeError, match="'seconds'"):
        ExampleRow(**ROW, seconds=1.0)


def test_an_item_missing_a_column_fails_naming_it():
    with pytest.raises(KeyError, match="worker"):
        item_values({k: v for k, v in ITEM.items() if k != "worker"})


def test_the_row_columns_are_the_records_fields_in_order():
    assert tuple(f.name for f in dataclasses.fields(ExampleRow)) == ROW_COLUMNS
    assert ROW_COLUMNS[:3] == ("phase", "example", "case") and ROW_COLUMNS[-1] == "detail"
