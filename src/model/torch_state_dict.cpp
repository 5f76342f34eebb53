#include "model/torch_state_dict.h"

#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/zip_archive.h"
#include "model/element_type.h"

namespace mogserve::model {
namespace {

struct Object;
using Ref = std::shared_ptr<Object>;

// A global (module.name) such as a storage type or a rebuild function.
struct Global {
  std::string name;  // "torch._utils._rebuild_tensor_v2", "torch.FloatStorage", ...
};
struct Storage {
  std::string type;  // "FloatStorage", ...
  std::string key;   // record name under <archive>/data/
  int64_t numel = 0;
};
struct Tensor {
  std::shared_ptr<Storage> storage;
  int64_t offset = 0;
  std::vector<int64_t> sizes, strides;
};
struct Mark {};
using Tuple = std::vector<Ref>;
using Dict = std::vector<std::pair<Ref, Ref>>;  // insertion order

// Reference semantics: SETITEMS mutates a dict that the memo also holds.
struct Object {
  std::variant<std::monostate, bool, int64_t, double, std::string, Tuple, Dict, Global,
               std::shared_ptr<Storage>, Tensor, Mark>
      v;
};

template <typename T>
Ref Make(T value) {
  auto o = std::make_shared<Object>();
  o->v = std::move(value);
  return o;
}

class Unpickler {
 public:
  explicit Unpickler(std::span<const uint8_t> p) : p_(p) {}

  StatusOr<Ref> Run() {
    while (pos_ < p_.size()) {
      const uint8_t op = p_[pos_++];
      if (op == '.') {
        if (stack_.empty()) return InvalidData("pickle: STOP with an empty stack");
        return stack_.back();
      }
      MOGSERVE_RETURN_IF_ERROR(Step(op));
    }
    return InvalidData("pickle: data ends before STOP (truncated?)");
  }

 private:
  Status Step(uint8_t op);
  std::optional<Status> StepValue(uint8_t op);      // nullopt: not a value opcode
  std::optional<Status> StepContainer(uint8_t op);  // nullopt: not a container opcode
  // Pushes `value` onto the stack.
  Status Push(Ref value) {
    stack_.push_back(std::move(value));
    return Status::Ok();
  }
  Status Reduce();
  Status SetItem();
  Status SetItems();
  Status AddToDict(const Tuple& items);
  StatusOr<Ref> Call(const std::string& fn, const Tuple& args);

  bool Need(size_t n) const { return pos_ + n <= p_.size(); }
  uint64_t ReadUInt(size_t n) {
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(p_[pos_ + i]) << (8 * i);
    pos_ += n;
    return v;
  }
  StatusOr<std::string> ReadLine() {
    const size_t start = pos_;
    while (pos_ < p_.size() && p_[pos_] != '\n') ++pos_;
    if (pos_ >= p_.size()) return InvalidData("pickle: unterminated GLOBAL");
    return std::string(reinterpret_cast<const char*>(p_.data() + start), pos_++ - start);
  }
  Status PushString(size_t length_bytes) {
    if (!Need(length_bytes)) return InvalidData("pickle: truncated string");
    const size_t n = ReadUInt(length_bytes);
    if (!Need(n)) return InvalidData("pickle: truncated string");
    stack_.push_back(Make(std::string(reinterpret_cast<const char*>(p_.data() + pos_), n)));
    pos_ += n;
    return Status::Ok();
  }
  Status PushInt(size_t bytes, bool is_signed) {
    if (!Need(bytes)) return InvalidData("pickle: truncated integer");
    uint64_t v = ReadUInt(bytes);
    if (is_signed && bytes < 8 && (v >> (8 * bytes - 1)) != 0) v |= ~uint64_t{0} << (8 * bytes);
    stack_.push_back(Make(static_cast<int64_t>(v)));
    return Status::Ok();
  }
  StatusOr<Tuple> PopToMark() {
    for (size_t i = stack_.size(); i-- > 0;) {
      if (std::holds_alternative<Mark>(stack_[i]->v)) {
        Tuple items(stack_.begin() + static_cast<std::ptrdiff_t>(i) + 1, stack_.end());
        stack_.resize(i);
        return items;
      }
    }
    return InvalidData("pickle: no MARK on the stack");
  }
  StatusOr<Ref> Pop() {
    if (stack_.empty()) return InvalidData("pickle: stack underflow");
    Ref r = stack_.back();
    stack_.pop_back();
    return r;
  }
  Status Memoize(uint64_t index) {
    if (stack_.empty()) return InvalidData("pickle: PUT with an empty stack");
    memo_[index] = stack_.back();
    return Status::Ok();
  }
  Status Recall(uint64_t index) {
    auto it = memo_.find(index);
    if (it == memo_.end()) return InvalidData("pickle: GET of an unknown memo slot");
    stack_.push_back(it->second);
    return Status::Ok();
  }
  Status PushTuple(size_t n) {
    if (stack_.size() < n) return InvalidData("pickle: stack underflow in TUPLE");
    Tuple t(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end());
    stack_.resize(stack_.size() - n);
    stack_.push_back(Make(std::move(t)));
    return Status::Ok();
  }
  Status PersistentLoad();

  std::span<const uint8_t> p_;
  size_t pos_ = 0;
  std::vector<Ref> stack_;
  std::map<uint64_t, Ref> memo_;
};

// The opcodes that push a value: None, booleans, integers, floats, strings and bytes.
std::optional<Status> Unpickler::StepValue(uint8_t op) {
  switch (op) {
    case 'N':
      return Push(Make(std::monostate{}));  // NONE
    case 0x88:
      return Push(Make(true));  // NEWTRUE
    case 0x89:
      return Push(Make(false));  // NEWFALSE
    case 'K':
      return PushInt(1, false);  // BININT1
    case 'M':
      return PushInt(2, false);  // BININT2
    case 'J':
      return PushInt(4, true);  // BININT
    case 0x8a: {                // LONG1
      if (!Need(1)) return InvalidData("pickle: truncated LONG1");
      const size_t n = p_[pos_++];
      if (n > 8) return Unsupported("pickle: integer wider than 64 bits");
      return n == 0 ? Push(Make(int64_t{0})) : PushInt(n, true);
    }
    case 'G': {  // BINFLOAT, big-endian
      if (!Need(8)) return InvalidData("pickle: truncated BINFLOAT");
      uint64_t bits = 0;
      for (int i = 0; i < 8; ++i) bits = bits << 8 | p_[pos_++];
      double d;
      std::memcpy(&d, &bits, 8);
      stack_.push_back(Make(d));
      return Status::Ok();
    }
    case 'X':
      return PushString(4);  // BINUNICODE
    case 0x8c:
      return PushString(1);  // SHORT_BINUNICODE
    case 'T':
      return PushString(4);  // BINSTRING
    case 'U':
      return PushString(1);  // SHORT_BINSTRING
    case 'B':
      return PushString(4);  // BINBYTES
    case 'C':
      return PushString(1);  // SHORT_BINBYTES
    default:
      return std::nullopt;
  }
}

// The opcodes that build tuples, lists and dicts.
std::optional<Status> Unpickler::StepContainer(uint8_t op) {
  switch (op) {
    case '}':
      return Push(Make(Dict{}));  // EMPTY_DICT
    case ']':
      return Push(Make(Tuple{}));  // EMPTY_LIST
    case ')':
      return Push(Make(Tuple{}));  // EMPTY_TUPLE
    case '(':
      return Push(Make(Mark{}));  // MARK
    case 't': {                   // TUPLE
      MOGSERVE_ASSIGN_OR_RETURN(Tuple t, PopToMark());
      return Push(Make(std::move(t)));
    }
    case 0x85:
      return PushTuple(1);
    case 0x86:
      return PushTuple(2);
    case 0x87:
      return PushTuple(3);
    case 's':
      return SetItem();
    case 'u':
      return SetItems();
    case 'a': {  // APPEND
      MOGSERVE_ASSIGN_OR_RETURN(Ref item, Pop());
      if (stack_.empty() || !std::holds_alternative<Tuple>(stack_.back()->v)) {
        return InvalidData("pickle: APPEND to a non-list");
      }
      std::get<Tuple>(stack_.back()->v).push_back(item);
      return Status::Ok();
    }
    case 'e': {  // APPENDS
      MOGSERVE_ASSIGN_OR_RETURN(Tuple items, PopToMark());
      if (stack_.empty() || !std::holds_alternative<Tuple>(stack_.back()->v)) {
        return InvalidData("pickle: APPENDS to a non-list");
      }
      Tuple& list = std::get<Tuple>(stack_.back()->v);
      list.insert(list.end(), items.begin(), items.end());
      return Status::Ok();
    }
    case 'b':  // BUILD: an OrderedDict's state (its _metadata) is not needed; drop it
      return Pop().status();
    default:
      return std::nullopt;
  }
}

// One opcode: values and containers first, then framing, the memo, globals and storages.
Status Unpickler::Step(uint8_t op) {
  if (std::optional<Status> done = StepValue(op)) return *done;
  if (std::optional<Status> done = StepContainer(op)) return *done;
  switch (op) {
    case 0x80:
      pos_ += 1;
      return Status::Ok();  // PROTO n
    case 0x95:
      pos_ += 8;
      return Status::Ok();  // FRAME (protocol 4)
    case 'q':
      return Need(1) ? Memoize(ReadUInt(1)) : InvalidData("pickle: truncated BINPUT");
    case 'r':
      return Need(4) ? Memoize(ReadUInt(4)) : InvalidData("pickle: truncated PUT");
    case 0x94:
      return Memoize(memo_.size());  // MEMOIZE
    case 'h':
      return Need(1) ? Recall(ReadUInt(1)) : InvalidData("pickle: truncated BINGET");
    case 'j':
      return Need(4) ? Recall(ReadUInt(4)) : InvalidData("pickle: truncated GET");
    case 'c': {  // GLOBAL module\nname\n
      MOGSERVE_ASSIGN_OR_RETURN(std::string module, ReadLine());
      MOGSERVE_ASSIGN_OR_RETURN(std::string name, ReadLine());
      stack_.push_back(Make(Global{module + "." + name}));
      return Status::Ok();
    }
    case 'Q':
      return PersistentLoad();
    case 'R':
      return Reduce();
    default: {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "0x%02x", op);
      return Unsupported(std::string("pickle: opcode ") + hex + " is not used by torch.save");
    }
  }
}

// ('storage', StorageType, key, location, numel) → a storage reference.
Status Unpickler::PersistentLoad() {
  MOGSERVE_ASSIGN_OR_RETURN(Ref pid, Pop());
  const Tuple* t = std::get_if<Tuple>(&pid->v);
  if (t == nullptr || t->size() < 5 || !std::holds_alternative<std::string>((*t)[0]->v) ||
      std::get<std::string>((*t)[0]->v) != "storage" ||
      !std::holds_alternative<Global>((*t)[1]->v) ||
      !std::holds_alternative<std::string>((*t)[2]->v) ||
      !std::holds_alternative<int64_t>((*t)[4]->v)) {
    return InvalidData("pickle: persistent id is not a torch storage reference");
  }
  auto storage = std::make_shared<Storage>();
  const std::string& type = std::get<Global>((*t)[1]->v).name;
  storage->type = type.substr(type.rfind('.') + 1);
  storage->key = std::get<std::string>((*t)[2]->v);
  storage->numel = std::get<int64_t>((*t)[4]->v);
  stack_.push_back(Make(storage));
  return Status::Ok();
}

StatusOr<std::vector<int64_t>> IntTuple(const Ref& r) {
  const Tuple* t = std::get_if<Tuple>(&r->v);
  if (t == nullptr) return InvalidData("pickle: expected a tuple of ints");
  std::vector<int64_t> out;
  for (const Ref& e : *t) {
    if (!std::holds_alternative<int64_t>(e->v)) return InvalidData("pickle: expected ints");
    out.push_back(std::get<int64_t>(e->v));
  }
  return out;
}

StatusOr<Ref> Unpickler::Call(const std::string& fn, const Tuple& args) {
  if (fn == "collections.OrderedDict" || fn == "builtins.dict") return Make(Dict{});
  if (fn == "torch._utils._rebuild_tensor_v2" || fn == "torch._utils._rebuild_tensor") {
    if (args.size() < 4 || !std::holds_alternative<std::shared_ptr<Storage>>(args[0]->v) ||
        !std::holds_alternative<int64_t>(args[1]->v)) {
      return InvalidData("pickle: malformed tensor record");
    }
    Tensor t;
    t.storage = std::get<std::shared_ptr<Storage>>(args[0]->v);
    t.offset = std::get<int64_t>(args[1]->v);
    MOGSERVE_ASSIGN_OR_RETURN(t.sizes, IntTuple(args[2]));
    MOGSERVE_ASSIGN_OR_RETURN(t.strides, IntTuple(args[3]));
    if (t.sizes.size() != t.strides.size()) return InvalidData("pickle: sizes/strides differ");
    return Make(std::move(t));
  }
  if (fn == "torch._utils._rebuild_parameter" ||
      fn == "torch._utils._rebuild_parameter_with_state") {
    if (args.empty() || !std::holds_alternative<Tensor>(args[0]->v)) {
      return InvalidData("pickle: malformed parameter record");
    }
    return args[0];
  }
  return Unsupported("the checkpoint holds an object of type " + fn +
                     "; only state_dicts of tensors are supported");
}

Status Unpickler::Reduce() {
  MOGSERVE_ASSIGN_OR_RETURN(Ref args, Pop());
  MOGSERVE_ASSIGN_OR_RETURN(Ref callable, Pop());
  const Global* g = std::get_if<Global>(&callable->v);
  const Tuple* a = std::get_if<Tuple>(&args->v);
  if (g == nullptr || a == nullptr) return InvalidData("pickle: REDUCE of a non-callable");
  MOGSERVE_ASSIGN_OR_RETURN(Ref result, Call(g->name, *a));
  stack_.push_back(std::move(result));
  return Status::Ok();
}

Status Unpickler::SetItem() {
  MOGSERVE_ASSIGN_OR_RETURN(Ref value, Pop());
  MOGSERVE_ASSIGN_OR_RETURN(Ref key, Pop());
  return AddToDict({key, value});
}

Status Unpickler::SetItems() {
  MOGSERVE_ASSIGN_OR_RETURN(Tuple items, PopToMark());
  return AddToDict(items);
}

Status Unpickler::AddToDict(const Tuple& items) {
  if (items.size() % 2 != 0 || stack_.empty() || !std::holds_alternative<Dict>(stack_.back()->v)) {
    return InvalidData("pickle: SETITEMS on a non-dict");
  }
  Dict& dict = std::get<Dict>(stack_.back()->v);
  for (size_t i = 0; i < items.size(); i += 2) dict.emplace_back(items[i], items[i + 1]);
  return Status::Ok();
}

// True when `r` is a non-empty dict of string → tensor.
bool IsStateDict(const Ref& r) {
  const Dict* d = std::get_if<Dict>(&r->v);
  if (d == nullptr || d->empty()) return false;
  for (const auto& [k, v] : *d) {
    if (!std::holds_alternative<std::string>(k->v) || !std::holds_alternative<Tensor>(v->v)) {
      return false;
    }
  }
  return true;
}

StatusOr<const Dict*> FindStateDict(const Ref& root) {
  if (IsStateDict(root)) return &std::get<Dict>(root->v);
  if (const Dict* d = std::get_if<Dict>(&root->v)) {
    for (const char* wrapper : {"state_dict", "model", "net"}) {
      for (const auto& [k, v] : *d) {
        const std::string* key = std::get_if<std::string>(&k->v);
        if (key != nullptr && *key == wrapper && IsStateDict(v)) return &std::get<Dict>(v->v);
      }
    }
  }
  return InvalidData(
      "the PyTorch file holds no state_dict (a dict of name -> tensor, plain or under "
      "'state_dict', 'model' or 'net')");
}

// Copies a (possibly strided, offset) view of a storage record into float32 values.
StatusOr<HostTensor> Materialize(const std::string& name, const Tensor& t,
                                 const std::map<std::string, std::span<const uint8_t>>& records) {
  const std::optional<ElementType> type = ElementTypeFromTorchStorage(t.storage->type);
  if (!type) {
    return Unsupported("tensor '" + name + "' has storage type " + t.storage->type);
  }
  auto it = records.find(t.storage->key);
  if (it == records.end()) {
    return InvalidData("tensor '" + name + "': storage record data/" + t.storage->key +
                       " is missing from the archive");
  }
  const int64_t element_bytes = ElementBytes(*type);
  const int64_t available = static_cast<int64_t>(it->second.size()) / element_bytes;
  HostTensor out;
  out.shape = t.sizes;
  // Sizes and strides come from the file: bound every product by the record before using it,
  // so a corrupt file can neither overflow the arithmetic nor make us allocate without limit.
  int64_t numel = 1;
  int64_t last = t.offset;  // the furthest element the view touches must lie inside the record
  for (size_t d = 0; d < t.sizes.size(); ++d) {
    if (t.sizes[d] < 0 || t.strides[d] < 0 || t.sizes[d] > available || t.strides[d] > available) {
      return InvalidData("tensor '" + name + "' has a size or stride its storage cannot hold");
    }
    numel *= t.sizes[d];
    if (numel > available) {
      return InvalidData("tensor '" + name + "' has more elements than its storage record");
    }
    if (t.sizes[d] > 0) last += (t.sizes[d] - 1) * t.strides[d];
  }
  if (t.offset < 0 || t.offset > available || (numel > 0 && last >= available)) {
    return InvalidData("tensor '" + name + "' reaches past the end of its storage record");
  }
  out.values.resize(static_cast<size_t>(numel));
  std::vector<int64_t> index(t.sizes.size(), 0);
  for (int64_t i = 0; i < numel; ++i) {
    int64_t element = t.offset;
    for (size_t d = 0; d < index.size(); ++d) element += index[d] * t.strides[d];
    out.values[static_cast<size_t>(i)] =
        ElementToFloat(*type, it->second.data() + element * element_bytes);
    for (size_t d = index.size(); d-- > 0;) {  // row-major increment
      if (++index[d] < t.sizes[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

}  // namespace

StatusOr<HostTensorMap> ReadTorchZipStateDict(std::span<const uint8_t> bytes) {
  MOGSERVE_ASSIGN_OR_RETURN(std::vector<ZipEntry> entries, ReadZipEntries(bytes));
  // Records live under one top-level folder: <archive>/data.pkl, <archive>/data/<key>.
  const ZipEntry* pickle = nullptr;
  for (const ZipEntry& e : entries) {
    const size_t slash = e.name.find('/');
    if (slash != std::string::npos && e.name.substr(slash + 1) == "data.pkl") pickle = &e;
  }
  if (pickle == nullptr)
    return InvalidData("the zip archive has no data.pkl (not a torch.save file)");
  const std::string data_prefix = pickle->name.substr(0, pickle->name.find('/')) + "/data/";
  std::map<std::string, std::span<const uint8_t>> records;
  for (const ZipEntry& e : entries) {
    if (e.name.rfind(data_prefix, 0) == 0) records[e.name.substr(data_prefix.size())] = e.data;
  }
  Unpickler unpickler(pickle->data);
  MOGSERVE_ASSIGN_OR_RETURN(Ref root, unpickler.Run());
  MOGSERVE_ASSIGN_OR_RETURN(const Dict* state_dict, FindStateDict(root));
  HostTensorMap out;
  for (const auto& [k, v] : *state_dict) {
    const std::string& name = std::get<std::string>(k->v);
    MOGSERVE_ASSIGN_OR_RETURN(HostTensor t, Materialize(name, std::get<Tensor>(v->v), records));
    out.emplace(name, std::move(t));
  }
  return out;
}

}  // namespace mogserve::model
