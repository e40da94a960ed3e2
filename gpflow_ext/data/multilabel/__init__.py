"""Multi-label readers: the Extreme Classification Repository text format and Mulan sparse ARFF.

:func:`gpflow_ext.data.load_multilabel` finds a dataset's files in any of these layouts and reads them.

Both return ``MultiLabelData(X, Y, ...)`` with ``X`` a ``scipy.sparse.csr_matrix`` [N, D] of
features and ``Y`` a ``csr_matrix`` [N, K] of 0/1 labels. Nothing is ever densified.

The code lives in small modules, re-exported here:

* :mod:`.types`: :class:`MultiLabelData`, :func:`select_rows`;
* :mod:`.text`: the XMC text format: streaming :func:`iter_xmc_chunks`, :func:`read_xmc_text`,
  :class:`XMCTextWriter` / :func:`write_xmc_text`, split files;
* :mod:`.mulan`: Mulan ARFF + XML;
* :mod:`.stream`: ``tf.data`` pipelines streamed from XMC text files or sharded TFRecords.
"""

from .mulan import read_mulan_arff, read_mulan_labels
from .stream import XMCTextSource, XMCTFRecordSource, sparse_batch_to_csr, write_xmc_tfrecords
from .text import (
    XMCTextWriter,
    iter_xmc_chunks,
    load_xmc_split,
    read_xmc_header,
    read_xmc_split,
    read_xmc_text,
    write_xmc_text,
)
from .types import MultiLabelData, select_rows

__all__ = [
    "MultiLabelData",
    "read_xmc_text",
    "read_xmc_header",
    "iter_xmc_chunks",
    "write_xmc_text",
    "XMCTextWriter",
    "read_xmc_split",
    "load_xmc_split",
    "read_mulan_labels",
    "read_mulan_arff",
    "select_rows",
    "XMCTextSource",
    "XMCTFRecordSource",
    "write_xmc_tfrecords",
    "sparse_batch_to_csr",
]
