// Collectives over one mesh dim, with the padding of uneven pieces.
// See collectives.h.
#include "core/collectives.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <vector>

#include "layout/shard_layout.h"

namespace dtensor::collectives {
namespace {

// ceil(extent / n): the padded piece every rank sends for a dim of `extent`.
int64_t padded_piece(int64_t extent, int64_t n) { return n == 0 ? 0 : (extent + n - 1) / n; }

// `x` zero-padded at the end of `dim` to `size` (x itself when already that long).
at::Tensor pad_dim(const at::Tensor& x, int64_t dim, int64_t size) {
  if (x.size(dim) == size) return x;
  std::vector<int64_t> shape = x.sizes().vec();
  shape[static_cast<size_t>(dim)] = size;
  at::Tensor out = at::zeros(shape, x.options());
  out.narrow(dim, 0, x.size(dim)).copy_(x);
  return out;
}

// `padded`'s dim 0 holds n pieces of `piece` = ceil(extent / n) rows each;
// keeps the first chunk_span(extent, n, j).size rows of piece j (drops the
// padding). Under torch.chunk sizes every piece before the last non-empty one
// is full and the later ones are empty, so the kept rows are exactly rows
// [0, extent): one copy, not n slices and a cat (256 of them on 256 ranks).
at::Tensor unpad_pieces(const at::Tensor& padded, int64_t n, int64_t piece, int64_t extent) {
  if (piece * n == extent) return padded;
  return padded.narrow(0, 0, extent).clone();  // a copy: the padding is not kept alive
}

thread_local ResultKeeper* t_keeper = nullptr;

// The thread's keeper decides on the collective `name` of `input`; `again`
// calls the same collective, which then runs (no keeper while it does).
at::Tensor ask_keeper(const char* name, const at::Tensor& input, const std::function<at::Tensor()>& again) {
  return t_keeper->result(name, input, [&] {
    NoResultKeeper running;
    return again();
  });
}

}  // namespace

ResultKeeper* set_thread_result_keeper(ResultKeeper* keeper) {
  ResultKeeper* previous = t_keeper;
  t_keeper = keeper;
  return previous;
}

at::Tensor all_gather_dim(const at::Tensor& local, const DeviceMesh& mesh, int mesh_dim,
                          int64_t dim, int64_t extent) {
  if (t_keeper != nullptr) {
    return ask_keeper("_c10d_functional::all_gather_into_tensor", local,
                      [&] { return all_gather_dim(local, mesh, mesh_dim, dim, extent); });
  }
  Communicator& comm = mesh.communicator(mesh_dim);
  const int64_t n = comm.size();
  const int64_t piece = padded_piece(extent, n);
  at::Tensor send = pad_dim(local.movedim(dim, 0), 0, piece).contiguous();
  std::vector<int64_t> out_shape = send.sizes().vec();
  out_shape[0] = piece * n;
  at::Tensor gathered = at::empty(out_shape, send.options());
  comm.all_gather_into_tensor(gathered, send, {}, mesh.collective_tag(mesh_dim));
  return unpad_pieces(gathered, n, piece, extent).movedim(0, dim).contiguous();
}

at::Tensor all_gather_sized(const at::Tensor& local, const DeviceMesh& mesh, int mesh_dim,
                            int64_t dim, const std::vector<int64_t>& sizes) {
  if (t_keeper != nullptr) {
    return ask_keeper("_c10d_functional::all_gather_into_tensor", local,
                      [&] { return all_gather_sized(local, mesh, mesh_dim, dim, sizes); });
  }
  Communicator& comm = mesh.communicator(mesh_dim);
  const int64_t n = comm.size();
  TORCH_CHECK(static_cast<int64_t>(sizes.size()) == n, "all_gather_sized: ", sizes.size(),
              " piece sizes for a group of ", n, " ranks");
  TORCH_CHECK(local.size(dim) == sizes[static_cast<size_t>(comm.rank())], "all_gather_sized: rank ",
              mesh.global_rank(), " holds ", local.size(dim), " elements of dim ", dim,
              " but its piece is ", sizes[static_cast<size_t>(comm.rank())]);
  const int64_t piece = *std::max_element(sizes.begin(), sizes.end());
  at::Tensor send = pad_dim(local.movedim(dim, 0), 0, piece).contiguous();
  std::vector<int64_t> out_shape = send.sizes().vec();
  out_shape[0] = piece * n;
  at::Tensor gathered = at::empty(out_shape, send.options());
  comm.all_gather_into_tensor(gathered, send, {}, mesh.collective_tag(mesh_dim));
  std::vector<at::Tensor> pieces;
  for (int64_t r = 0; r < n; ++r) pieces.push_back(gathered.narrow(0, r * piece, sizes[static_cast<size_t>(r)]));
  return at::cat(pieces, 0).movedim(0, dim).contiguous();
}

at::Tensor strided_piece(const at::Tensor& full, int64_t dim, int64_t split_factor, int64_t n,
                         int64_t index) {
  std::vector<at::Tensor> pieces;
  for (const ChunkSpan& span : strided_chunk_spans(full.size(dim), split_factor, n, index)) {
    pieces.push_back(full.narrow(dim, span.offset, span.size));
  }
  return at::cat(pieces, dim).contiguous();
}

at::Tensor slice_of_full(at::Tensor full, const DeviceMesh& mesh, const Placements& placements) {
  for (int i = 0; i < mesh.ndim(); ++i) {
    const Placement& p = placements[static_cast<size_t>(i)];
    const int64_t n = mesh.size(i);
    if (p.is_strided_shard() && n > 1) {
      full = strided_piece(full, p.shard_dim(), p.split_factor(), n, mesh.get_local_rank(i));
    } else if (p.is_shard()) {
      const ChunkSpan span = chunk_span(full.size(p.shard_dim()), n, mesh.get_local_rank(i));
      full = full.narrow(p.shard_dim(), span.offset, span.size);
    }
    if (p.is_partial() && p.reduce_op() == ReduceOp::kSum) full = full / n;
  }
  return full;
}

at::Tensor reduce_scatter_dim(const at::Tensor& local, const DeviceMesh& mesh, int mesh_dim,
                              int64_t dim, ReduceOp op) {
  if (t_keeper != nullptr) {
    return ask_keeper("_c10d_functional::reduce_scatter_tensor", local,
                      [&] { return reduce_scatter_dim(local, mesh, mesh_dim, dim, op); });
  }
  Communicator& comm = mesh.communicator(mesh_dim);
  const int64_t n = comm.size();
  const int64_t extent = local.size(dim);
  const int64_t piece = padded_piece(extent, n);
  at::Tensor send = pad_dim(local.movedim(dim, 0), 0, piece * n).contiguous();
  std::vector<int64_t> out_shape = send.sizes().vec();
  out_shape[0] = piece;
  at::Tensor out = at::empty(out_shape, send.options());
  ReduceScatterOptions options;
  options.reduce_op = op;
  comm.reduce_scatter_tensor(out, send, options, mesh.collective_tag(mesh_dim));
  const ChunkSpan mine = chunk_span(extent, n, comm.rank());
  // Even pieces along dim 0: the buffer is the result, not a view of it (a
  // view cannot be a .grad that zero_grad detaches in place).
  if (dim == 0 && mine.size == piece) return out;
  return out.narrow(0, 0, mine.size).movedim(0, dim).contiguous();
}

at::Tensor all_to_all_dims(const at::Tensor& local, const DeviceMesh& mesh, int mesh_dim,
                           int64_t from_dim, int64_t from_extent, int64_t to_dim) {
  if (t_keeper != nullptr) {
    return ask_keeper("_c10d_functional::all_to_all_single", local,
                      [&] { return all_to_all_dims(local, mesh, mesh_dim, from_dim, from_extent, to_dim); });
  }
  Communicator& comm = mesh.communicator(mesh_dim);
  const int64_t n = comm.size();
  const int64_t from_piece = padded_piece(from_extent, n);
  const int64_t to_extent = local.size(to_dim);
  const int64_t to_piece = padded_piece(to_extent, n);
  at::Tensor padded = pad_dim(pad_dim(local, from_dim, from_piece), to_dim, to_piece * n);
  std::vector<int64_t> split = {n, to_piece};
  at::Tensor send = padded.unflatten(to_dim, split).movedim(to_dim, 0).contiguous();
  at::Tensor received = at::empty_like(send);
  comm.all_to_all_single(received, send, {}, mesh.collective_tag(mesh_dim));
  // Rank j's padded piece of from_dim, one after another along from_dim; as
  // in unpad_pieces, the real rows are the first from_extent of them.
  const at::Tensor joined = received.movedim(0, from_dim).flatten(from_dim, from_dim + 1);
  const ChunkSpan mine = chunk_span(to_extent, n, comm.rank());
  return joined.narrow(from_dim, 0, from_extent).narrow(to_dim, 0, mine.size).contiguous();
}

void all_reduce_(at::Tensor& tensor, const DeviceMesh& mesh, int mesh_dim, ReduceOp op) {
  AllReduceOptions options;
  options.reduce_op = op;
  mesh.communicator(mesh_dim).all_reduce(tensor, options, mesh.collective_tag(mesh_dim));
}

at::Tensor all_reduce(const at::Tensor& local, const DeviceMesh& mesh, int mesh_dim, ReduceOp op) {
  if (t_keeper != nullptr) {
    return ask_keeper("_c10d_functional::all_reduce", local,
                      [&] { return all_reduce(local, mesh, mesh_dim, op); });
  }
  at::Tensor out = local.contiguous().clone();
  all_reduce_(out, mesh, mesh_dim, op);
  return out;
}

at::Tensor scatter_dim(const at::Tensor& full, const DeviceMesh& mesh, int mesh_dim, int64_t dim,
                       int64_t root) {
  Communicator& comm = mesh.communicator(mesh_dim);
  const int64_t n = comm.size();
  const int64_t extent = full.size(dim);
  const int64_t piece = padded_piece(extent, n);
  std::vector<int64_t> piece_shape = full.sizes().vec();
  piece_shape[static_cast<size_t>(dim)] = piece;
  at::Tensor output = at::empty(piece_shape, full.options());
  std::vector<at::Tensor> inputs;
  if (comm.rank() == root) {
    for (int64_t j = 0; j < n; ++j) {
      const ChunkSpan span = chunk_span(extent, n, j);
      inputs.push_back(pad_dim(full.narrow(dim, span.offset, span.size), dim, piece).contiguous());
    }
  }
  ScatterOptions options;
  options.root = root;
  comm.scatter(output, inputs, options, mesh.collective_tag(mesh_dim));
  return output.narrow(dim, 0, chunk_span(extent, n, comm.rank()).size).contiguous();
}

at::Tensor broadcast(const at::Tensor& tensor, const DeviceMesh& mesh, int mesh_dim, int64_t root) {
  at::Tensor out = tensor.contiguous().clone();
  BroadcastOptions options;
  options.root = root;
  mesh.communicator(mesh_dim).broadcast(out, options, mesh.collective_tag(mesh_dim));
  return out;
}

at::Tensor all_gather_world(const at::Tensor& local, World& world) {
  const at::Tensor input = local.contiguous();
  std::vector<int64_t> shape = input.sizes().vec();
  TORCH_CHECK(!shape.empty(), "all_gather_world: rank ", world.rank(), " passed a 0-D tensor; give it a dim 0");
  shape[0] *= world.size();
  at::Tensor all = at::empty(shape, input.options());
  world.world_group()->all_gather_into_tensor(all, input)->wait();
  return all;
}

void barrier(World& world) { world.world_group()->barrier(); }

}  // namespace dtensor::collectives
