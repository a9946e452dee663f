"""Reading a data set held as image records: decoded in batches, once per split, by id.

`RecordReader` is the reading half of the user's own data sets (`user_sets.UserDataset`,
registered as `folder`, `tfds`, `tfrecord`). A subclass gives `_records(split)` (a
`tf.data.Dataset` of (image record, label int64, id int64) in fixed order, the image record left
undecoded), `_decode(record)` (uint8 `[h, w, c]`), `_describe(split, position)` (how an error
names an example), and sets `_size`, `_channels` (what `image` converts to) and `unlabelled`;
it may override the attribute hooks (`_check_attribute_rows`, `_attributes_of`) and the record
lookups (`_held_records`, `_records_at`, `_records_of`).

Images are decoded per batch (`batches`), each batch in one graph call, or once per process for
a split whose content digest is recorded and whose pixels fit the budget of `decoded_splits` (an
audit evaluates every file on it), from the bytes its fingerprint read if they are held
(`held_files`); `examples(split, ids)` takes the images asked for from such a split, or decodes
only them; `annotation_batches` reads no image; `train_records` are paths or encoded images that
the trainer decodes with `decode_record`. An image that cannot be decoded is a one-line
`dataset_api.DataError` naming the file or record, raised by the batch holding it.
"""

import abc
import json

import numpy as np
import tensorflow as tf

from tf_forget.data import dataset_api
from tf_forget.data import decoded_splits
from tf_forget.data import held_files
from tf_forget.data import images
from tf_forget.data import user_inputs

_PARALLEL = dict(num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
# The most images decoded one by one, eagerly: a pipeline's batched decode costs a trace
# (~0.35 s) and ~0.02 ms an image, an eager decode ~0.75 ms an image.
EAGER = 256


class RecordReader(dataset_api.Dataset):
  """A data set read from image records (module docstring): streaming, decoding in batches,
  the split decoded whole, examples by id, a failing image named."""

  def content(self, split):
    """The recorded content digest of `split` (option `content`,
    `tf_forget.pipeline.data_identity`), or None if the data set was built without one."""
    return dict(self.spec.options.get("content") or {}).get(split)

  def _check_attribute_rows(self, split):
    """Checks `split`'s attribute rows before it is read (none here)."""
    del split

  def _attributes_of(self, split, ids):
    """The attributes of the examples `ids` of `split` (none here)."""
    del split, ids
    return {}

  @abc.abstractmethod
  def _records(self, split):
    """(image record, label int64, id int64) of `split` in fixed order."""

  @abc.abstractmethod
  def _decode(self, record):
    """uint8 `[h, w, c]` of one image record."""

  def _decode_head(self, split, n):
    """The first `n` examples of `split`, decoded eagerly (`_decode_eagerly`), labels checked."""
    head = self._records(split).take(n)
    return self._decode_eagerly(split, head, np.arange(n), check_labels=True)

  def _decode_eagerly(self, split, records, positions, check_labels=False):
    """The examples of `records`, the records at `positions` of `split` (sorted), each image
    decoded eagerly: the same ops as `_decode_batches` without tracing a pipeline, for a few
    images (`EAGER`). An image that cannot be read is a DataError naming it."""
    self.check_split(split)
    self._check_attribute_rows(split)
    pixels, labels, ids = [], [], []
    try:
      for record, label, i in records:
        pixels.append(self.image(record).numpy())
        labels.append(label.numpy())
        ids.append(i.numpy())
    except tf.errors.OpError as e:
      raise self._locate(split, int(positions[len(ids)]), 1, e) from e
    if not ids:
      return self.no_examples()
    ids, labels = np.asarray(ids, np.int64), np.asarray(labels, np.int64)
    first = int(positions[0])
    return dataset_api.Examples(
      images=np.stack(pixels),
      labels=self._checked_labels(split, first, labels) if check_labels else self._labels(labels),
      ids=ids,
      attributes=self._attributes_of(split, ids),
    )

  @abc.abstractmethod
  def _describe(self, split, position, example_id=None):
    """How an error names the example at `position` of `split` (or, position None, the one
    with `example_id`), e.g. "image cat/1.png of folder /data"."""

  def image(self, record):
    """uint8 `[H, W, channels]` of one image record (decoded, converted, resized)."""
    return images.convert_image(self._decode(record), self._size, self._channels)

  def _labels(self, labels):
    """int64 labels of a batch: `dataset_api.NO_LABEL` for every example of a data set without
    labels (what the source holds is not read as one)."""
    if self.unlabelled:
      return np.full(np.shape(labels), dataset_api.NO_LABEL, np.int64)
    return labels

  def _checked_labels(self, split, start, labels):
    if self.unlabelled:
      return self._labels(labels)
    bad = np.flatnonzero((labels < 0) | (labels >= self.spec.num_classes))
    if bad.size:
      raise dataset_api.DataError(
        f"{self._describe(split, start + int(bad[0]))} has label "
        f"{labels[bad[0]]}, not in [0, {self.spec.num_classes})"
      )
    return labels

  def _stream(self, split, batch_size, ds, batched=False):
    """Iterates a pipeline over `split` in batches of `batch_size` (`batched`: `ds` is batched
    so already) after checking its attribute rows; yields (position of the batch's first
    example, batch). An OpError becomes a DataError naming the example (found by re-reading
    the failing batch one example at a time)."""
    self.check_split(split)
    self._check_attribute_rows(split)
    return self._stream_unchecked(split, ds, batch_size, batched)

  def _stream_unchecked(self, split, ds, batch_size=4096, batched=False):
    ds = ds if batched else ds.batch(batch_size)
    iterator, start = iter(ds.prefetch(tf.data.AUTOTUNE)), 0
    while True:
      try:
        batch = next(iterator)
      except StopIteration:
        return
      except tf.errors.OpError as e:
        raise self._locate(split, start, batch_size, e) from e
      yield start, batch
      start += len(batch[1])

  def _locate(self, split, start, count, error):
    records = iter(self._records(split).skip(start).take(count))
    for position in range(start, start + count):
      try:
        record = next(records)
      except StopIteration:
        break
      except tf.errors.OpError as e:
        return dataset_api.DataError(
          f"cannot read {self._describe(split, position)}: {user_inputs.tf_message(e)}"
        )
      try:
        self.image(record[0])
      except tf.errors.OpError as e:
        return dataset_api.DataError(
          f"cannot decode {self._describe(split, position)}: {user_inputs.tf_message(e)}"
        )
    return dataset_api.DataError(
      f"cannot read split {split!r} of data set {self.spec.name!r} near "
      f"example {start}: {user_inputs.tf_message(error)}"
    )

  def batches(self, split, batch_size):
    """The split in fixed order, decoded once per process when its content is recorded and it
    fits `decoded_splits.DECODED_BYTES` (`_decoded`), streamed otherwise."""
    whole = self._decoded(split)
    if whole is None:
      yield from self._decode_batches(split, batch_size)
      return
    for start in range(0, len(whole), batch_size):
      yield whole.take(slice(start, start + batch_size))

  def _decoded(self, split):
    """The whole split decoded, kept for the next pass of this process (an audit evaluates
    every file on the same images, `decoded_splits`), or None: no recorded content digest (the
    files may change between passes), or more pixels than `decoded_splits.DECODED_BYTES`."""
    if self.content(split) is None:
      return None
    return decoded_splits.decode(
      self._decoded_key(split), self._decoded_size(split), lambda: self._decode_whole(split)
    )

  def decode_ahead(self, split):
    """Starts decoding `split` whole in a thread of this process (`decoded_splits.ahead`) when
    its files' bytes are held (`held_files`: every file was just read for its hash, so a first
    audit of them will evaluate on them); the thread's Future, or None."""
    if held_files.get(self.content(split)) is None:
      return None
    return decoded_splits.ahead(
      self._decoded_key(split), self._decoded_size(split), lambda: self._decode_whole(split)
    )

  def _decode_whole(self, split):
    return dataset_api.concatenate(self._decode_batches(split, 1024))

  def _decoded_size(self, split):
    return self.num_examples(split) * int(np.prod(self.spec.image_shape))

  def _decoded_key(self, split):
    return (type(self).__name__, json.dumps(self.spec.options, sort_keys=True, default=str), split)

  def _kept(self, split, ids):
    """The examples among the (unique, sorted) `ids` taken from the split this process keeps
    decoded (`_decoded`; an id it lacks is not in the split), or None if it keeps none."""
    if self.content(split) is None:
      return None
    whole = decoded_splits.get(self._decoded_key(split))
    if whole is None:
      return None
    return whole.take(np.flatnonzero(np.isin(whole.ids, ids)))

  def _held_records(self, split):
    """(encoded image bytes, label int64, id int64) of `split` in fixed order, from the bytes
    its fingerprint read (`held_files`), or None: the images are read from `_records`."""
    del split
    return None

  def _decode_batches(self, split, batch_size, limit=None):
    """`Examples` of `split` (its first `limit`, if given) in batches of `batch_size`, each
    batch's images decoded in one graph call (`tf.map_fn`), from the held bytes if any
    (`_held_records`)."""
    held = self._held_records(split)
    if held is None:
      records, image = self._records(split), self.image
    else:
      records, image = held, self._image_of_bytes
    records = records if limit is None else records.take(limit)
    ds = self._decoded_in_batches(records, batch_size, image)
    for start, (pixels, labels, ids) in self._stream(split, batch_size, ds, batched=True):
      ids = ids.numpy()
      yield dataset_api.Examples(
        images=pixels.numpy(),
        labels=self._checked_labels(split, start, labels.numpy()),
        ids=ids,
        attributes=self._attributes_of(split, ids),
      )

  def _decoded_in_batches(self, records, batch_size, image=None):
    """`records` (image record, label, id) in batches of `batch_size`, each batch's images
    decoded by `image` (default `self.image`) in one graph call (`tf.map_fn`: a tenth of the
    per-image cost of a `tf.data` element)."""
    image = image or self.image
    spec = tf.TensorSpec(self.spec.image_shape, tf.uint8)
    return records.batch(batch_size).map(
      lambda r, label, i: (tf.map_fn(image, r, fn_output_signature=spec), label, i), **_PARALLEL
    )

  def _image_of_bytes(self, data):
    """uint8 `[H, W, channels]` of encoded image bytes (a held file, `_held_records`)."""
    return images.convert_image(images.decode_image_bytes(data), self._size, self._channels)

  def calibration_examples(self, split, n):
    """`n` examples evenly spaced over `split`'s fixed order (both ends included), not its first
    `n`: a folder's order is class by class, so its first 100 images are often one class (a
    full int8 file calibrated on them can clip every other class's activations). Only the
    chosen images are decoded. Fewer than `n` examples: all of them."""
    total = self.num_examples(split)
    if total <= n:
      return self.take(split, n)
    positions = np.unique(np.round(np.linspace(0, total - 1, n)).astype(np.int64))
    if len(positions) <= EAGER:
      return self._decode_eagerly(split, self._records_at(split, positions), positions)
    ds = self._decoded_in_batches(self._records_at(split, positions), len(positions))
    self.check_split(split)
    self._check_attribute_rows(split)
    batches = self._stream_unchecked(split, ds, len(positions), True)
    return dataset_api.concatenate([self._picked(split, *batch) for _, batch in batches])

  def _picked(self, split, pixels, labels, ids):
    """The `Examples` of a decoded batch of records picked from `split` (labels as read)."""
    ids = ids.numpy()
    return dataset_api.Examples(
      images=pixels.numpy(),
      labels=self._labels(labels.numpy()),
      ids=ids,
      attributes=self._attributes_of(split, ids),
    )

  def examples(self, split, ids):
    """The examples with the given ids, in the order of `ids`: taken from the split decoded
    whole if this process keeps it (`_decoded`), else only those images are decoded
    (`_records_of`)."""
    ids = np.asarray(ids, np.int64)
    if not ids.size:
      return self.no_examples()
    kept = self._kept(split, np.unique(ids))
    if kept is not None:
      return dataset_api.in_order([kept], ids, split)
    ds = self._decoded_in_batches(self._records_of(split, np.unique(ids)), 1024)
    batches = self._stream(split, 1024, ds, batched=True)
    return dataset_api.in_order([self._picked(split, *b) for _, b in batches], ids, split)

  def _records_at(self, split, positions):
    """The records at `positions` (sorted unique) of `split`'s fixed order, read before any
    image is decoded; a data set that indexes its records overrides it."""
    keep = tf.constant(positions)
    return (
      self._records(split)
      .enumerate()
      .filter(lambda i, rec: tf.reduce_any(tf.equal(i, keep)))
      .map(lambda i, rec: rec)
    )

  def _records_of(self, split, ids):
    """The records of `split` whose id is in `ids` (sorted unique), read before any image is
    decoded (a binary search per record); a data set that indexes its records overrides it."""
    keep, last = tf.constant(ids), len(ids) - 1

    def wanted(rec, label, i):
      del rec, label
      at = tf.minimum(tf.searchsorted(keep, tf.reshape(i, [1]))[0], last)
      return tf.equal(tf.gather(keep, at), i)

    return self._records(split).filter(wanted)

  def annotation_batches(self, split, batch_size):
    ds = self._records(split).map(lambda r, label, i: (label, label, i))
    for start, (_, labels, ids) in self._stream(split, batch_size, ds):
      ids = ids.numpy()
      yield dataset_api.Annotations(
        labels=self._checked_labels(split, start, labels.numpy()),
        ids=ids,
        attributes=self._attributes_of(split, ids),
      )

  def tf_dataset(self, split):
    self.check_split(split)
    return self._records(split).map(lambda r, label, i: (self.image(r), label), **_PARALLEL)

  def train_records(self, split):
    """(image record: a path or encoded bytes, label int64) in fixed order."""
    self.check_split(split)
    return self._records(split).map(lambda r, label, i: (r, label))

  def decode_record(self, record):
    record, label = record
    return self.image(record), label
