"""Format registry and variant names (docs/spec.md §1.1)."""

import pytest

from tf_forget.artifacts import names
from tf_forget.export import formats


@pytest.mark.parametrize(
  "member,fmt,name",
  [
    ("dense", "float32", "dense"),
    ("dense", "float16", "float16"),
    ("dense", "dynamic_int8", "dynamic_int8"),
    ("dense", "full_int8", "full_int8"),
    ("prune_0.9", "float32", "prune_0.9"),
    ("prune_0.9", "full_int8", "prune_0.9+full_int8"),
  ],
)
def test_variant_names_round_trip(member, fmt, name):
  variant = names.Variant(member, fmt)
  assert variant.name == name
  assert names.parse_variant(name) == variant


def test_options_are_the_format_records():
  # The converter options of 000 §2.4 / appendix A: float32 unoptimised, float16 weights,
  # dynamic-range int8, full int8 calibrated with int8 input and output.
  assert names.FORMAT_NAMES == ("float32", "float16", "dynamic_int8", "full_int8")
  assert formats.options("full_int8") == dict(
    optimize=True,
    supported_types=(),
    int8_only=True,
    io_type="int8",
    representative=True,
    int16x8=False,
  )
  assert formats.options("float16")["supported_types"] == ("float16",)
  assert not formats.options("float32")["optimize"]
  assert formats.options("full_int8~cle") == formats.options("full_int8")
  int16x8 = formats.options("full_int8~int16x8")
  assert int16x8["int16x8"] and int16x8["io_type"] == "int16" and not int16x8["int8_only"]
  with pytest.raises(names.FormatError, match="unknown TFLite format 'int4'"):
    formats.options("int4")
  assert names.ENCODINGS == ("plain", "sparse")


@pytest.mark.parametrize(
  "bad",
  ["", "prune_0.9+bogus", "full_int8+float16", "dense+full_int8", "prune_0.9+float32", "a+b+c+d"],
)
def test_bad_variant_names(bad):
  with pytest.raises(names.FormatError):
    names.parse_variant(bad)


def test_parse_formats():
  assert names.parse_formats("float32, full_int8,float32") == ["float32", "full_int8"]
  with pytest.raises(names.FormatError, match="unknown TFLite format 'int4'"):
    names.parse_formats("float32,int4")
  with pytest.raises(names.FormatError):
    names.parse_formats(" , ")
  with pytest.raises(names.FormatError):
    names.Variant("dense", "float32", "gzip")


@pytest.mark.parametrize(
  "member,fmt,name",
  [
    ("dense", "float32", "float32+sparse"),
    ("dense", "full_int8", "full_int8+sparse"),
    ("prune_0.9", "float32", "prune_0.9+sparse"),
    ("prune_0.9", "full_int8", "prune_0.9+full_int8+sparse"),
  ],
)
def test_sparse_variant_names_round_trip(member, fmt, name):
  # Names per docs/spec.md §1.1 / names.Variant.name: defaults (dense, float32, plain) left out,
  # except that a dense sparse file keeps its format so the name never reads "sparse" alone.
  variant = names.Variant(member, fmt, "sparse")
  assert variant.name == name
  assert names.parse_variant(name) == variant
  assert names.plain_twin(variant) == names.Variant(member, fmt)


@pytest.mark.parametrize(
  "bad", ["sparse", "prune_0.9+float32+sparse", "sparse+full_int8", "full_int8+sparse+sparse"]
)
def test_bad_sparse_variant_names(bad):
  with pytest.raises(names.FormatError):
    names.parse_variant(bad)


def test_parse_encodings():
  assert names.parse_encodings("plain, sparse,plain") == ["plain", "sparse"]
  with pytest.raises(names.FormatError, match="unknown encoding 'gzip'"):
    names.parse_encodings("plain,gzip")
  with pytest.raises(names.FormatError, match="no encoding"):
    names.parse_encodings(",")


@pytest.mark.parametrize(
  "repair, kind", [("cle", "cle"), ("int16x8", "int16x8"), ("auto", "auto"), ("float2", "float")]
)
def test_repair_kinds(repair, kind):
  # The repairs that cost no bytes and the searched one are formats too.
  fmt = names.repair_format(repair)
  assert fmt == f"full_int8~{repair}" and names.repair_kind(fmt) == kind
  assert names.parse_variant(f"prune_0.5+{fmt}").format == fmt


@pytest.mark.parametrize(
  "member, layers, name",
  [
    ("dense", 3, "full_int8~float3"),
    ("prune_0.9", 1, "prune_0.9+full_int8~float1"),
    ("dense", 12, "full_int8~float12"),
  ],
)
def test_repaired_variant_names_round_trip(member, layers, name):
  # Full int8 with N layers kept in float is the format full_int8~float<N>.
  fmt = names.repair_format(f"float{layers}")
  variant = names.Variant(member, fmt)
  assert variant.name == name and names.parse_variant(name) == variant
  assert names.repair_layers(fmt) == layers and names.repair_layers("full_int8") is None
  assert variant.file_stem == fmt


@pytest.mark.parametrize(
  "bad", [3, "float0", "float100", "float-1", "float2.0", True, "3", "cle ", "aut"]
)
def test_bad_repair_names(bad):
  with pytest.raises(names.FormatError):
    names.repair_format(bad)


@pytest.mark.parametrize(
  "name",
  [
    "full_int8~float0",
    "float16~float3",
    "full_int8~float",
    "full_int8~float100",
    "full_int8~float3 ",
  ],
)
def test_other_names_are_not_repaired_formats(name):
  assert names.repair_layers(name) is None
  with pytest.raises(names.FormatError):
    names.Variant("dense", name)
