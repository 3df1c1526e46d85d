/* runtime._compile._native: call a compiled Numba kernel through its native entry point.
 *
 * A Python call of a Numba kernel pays for the dispatcher (argument types, overload lookup)
 * and for unboxing every array argument; for a kernel that computes in a few hundred
 * nanoseconds (one forward-kinematics pass) that is most of the call. A NativeKernel holds
 * the kernel's native address and a fixed argument plan: arrays bound once (a chain's packed
 * model), inputs checked exactly per call (type, byte order, shape, C order, alignment) and
 * outputs allocated per call and returned. A call fills the kernel's flattened arguments and
 * calls the machine code the dispatcher itself runs.
 *
 * Numba's native calling convention (numba.core.callconv.CPUCallConv) is
 *     int32 status = f(void **retptr, void **excinfo, <flattened arguments>)
 * where an array argument of ndim d is flattened into 5 + 2d machine words: meminfo, parent,
 * nitems, itemsize, data, shape[d], strides[d] (pointers and int64: all integer class). The
 * arrays passed here have no meminfo (NULL): Numba's reference counting skips NULL, as for
 * the arrays the fused step builds from raw pointers. runtime/_compile/native_call.py reads the
 * address and checks the kernel's signature (arrays only, no return value).
 *
 * The entry is called through a prototype of 32, 64 or MAX_WORDS integer words, the
 * smallest that holds the kernel's own (fewer words to copy and pass: a tenth of a
 * forward-kinematics call); the words past the kernel's own are zeros it never reads. On the
 * ABIs CPython runs on for x86-64 and AArch64 (System V, AAPCS64, Windows x64) the caller
 * owns and pops the argument area, so extra integer arguments are harmless.
 *
 * A call that does not match the plan, or a kernel that reports an error status, returns
 * fallback(*arguments) (the Python path, which converts or raises as usual), or None when
 * there is no fallback.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#define MAX_ARGS 16
#define MAX_DIMS 4
#define MAX_WORDS 96

#define W4 int64_t, int64_t, int64_t, int64_t
#define W16 W4, W4, W4, W4
typedef int32_t (*native_entry)(void **, void **, W16, W16, W16, W16, W16, W16);
typedef int32_t (*native_entry_32)(void **, void **, W16, W16);
typedef int32_t (*native_entry_64)(void **, void **, W16, W16, W16, W16);

#define A4(k) w[k], w[k + 1], w[k + 2], w[k + 3]
#define A16(k) A4(k), A4(k + 4), A4(k + 8), A4(k + 12)

enum { ROLE_BOUND = 0, ROLE_IN = 1, ROLE_OUT = 2 };

typedef struct {
    int role;
    int typenum;
    int ndim;
    npy_intp shape[MAX_DIMS];
    int word;            /* first flattened word of this argument */
    PyArrayObject *bound; /* ROLE_BOUND: the array (a reference is held) */
} Arg;

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    native_entry entry;
    PyObject *fallback; /* called with the same arguments when a call does not match */
    int count;
    int inputs;
    int outputs;
    int words;
    Arg args[MAX_ARGS];
    int64_t plan[MAX_WORDS]; /* the bound arrays' words; zeros elsewhere */
} NativeKernel;

static void
fill_words(int64_t *w, PyArrayObject *array)
{
    int d = PyArray_NDIM(array);
    w[0] = 0; /* meminfo */
    w[1] = 0; /* parent */
    w[2] = (int64_t)PyArray_SIZE(array);
    w[3] = (int64_t)PyArray_ITEMSIZE(array);
    w[4] = (int64_t)(intptr_t)PyArray_DATA(array);
    for (int k = 0; k < d; k++) {
        w[5 + k] = (int64_t)PyArray_DIM(array, k);
        w[5 + d + k] = (int64_t)PyArray_STRIDE(array, k);
    }
}

static int
matches(PyObject *object, const Arg *arg)
{
    if (!PyArray_Check(object)) {
        return 0;
    }
    PyArrayObject *array = (PyArrayObject *)object;
    if (PyArray_TYPE(array) != arg->typenum || PyArray_NDIM(array) != arg->ndim
        || !PyArray_ISNOTSWAPPED(array) || !PyArray_IS_C_CONTIGUOUS(array)
        || !PyArray_ISALIGNED(array)) {
        return 0;
    }
    for (int k = 0; k < arg->ndim; k++) {
        if (PyArray_DIM(array, k) != arg->shape[k]) {
            return 0;
        }
    }
    return 1;
}

static PyObject *
kernel_call(PyObject *self_object, PyObject *const *given, size_t nargsf, PyObject *kwnames)
{
    NativeKernel *self = (NativeKernel *)self_object;
    Py_ssize_t given_count = PyVectorcall_NARGS(nargsf);
    if ((kwnames != NULL && PyTuple_GET_SIZE(kwnames) > 0) || given_count != self->inputs) {
        if (self->fallback != NULL) {
            return PyObject_Vectorcall(self->fallback, given, nargsf, kwnames);
        }
        PyErr_Format(PyExc_TypeError, "NativeKernel takes %d arrays, got %zd", self->inputs,
                     given_count);
        return NULL;
    }
    int64_t w[MAX_WORDS];
    int passed = self->words <= 32 ? 32 : (self->words <= 64 ? 64 : MAX_WORDS);
    memcpy(w, self->plan, sizeof(int64_t) * (size_t)passed);
    PyObject *outputs[MAX_ARGS];
    int made = 0;
    int next = 0;
    for (int k = 0; k < self->count; k++) {
        const Arg *arg = &self->args[k];
        if (arg->role == ROLE_IN) {
            PyObject *object = given[next++];
            if (!matches(object, arg)) {
                goto fallback;
            }
            fill_words(w + arg->word, (PyArrayObject *)object);
        }
        else if (arg->role == ROLE_OUT) {
            PyObject *out = PyArray_SimpleNew(arg->ndim, (npy_intp *)arg->shape, arg->typenum);
            if (out == NULL) {
                goto error;
            }
            outputs[made++] = out;
            fill_words(w + arg->word, (PyArrayObject *)out);
        }
    }
    void *result = NULL;
    void *excinfo = NULL;
    int32_t status;
    if (passed == 32) {
        status = ((native_entry_32)self->entry)(&result, &excinfo, A16(0), A16(16));
    }
    else if (passed == 64) {
        status = ((native_entry_64)self->entry)(&result, &excinfo, A16(0), A16(16), A16(32),
                                                A16(48));
    }
    else {
        status = self->entry(&result, &excinfo, A16(0), A16(16), A16(32), A16(48), A16(64),
                             A16(80));
    }
    if (status != 0) {
        goto fallback;
    }
    if (made == 1) {
        return outputs[0];
    }
    PyObject *tuple = PyTuple_New(made);
    if (tuple == NULL) {
        goto error;
    }
    for (int k = 0; k < made; k++) {
        PyTuple_SET_ITEM(tuple, k, outputs[k]); /* steals the reference */
    }
    return tuple;
fallback:
    for (int k = 0; k < made; k++) {
        Py_DECREF(outputs[k]);
    }
    if (self->fallback != NULL) {
        return PyObject_Vectorcall(self->fallback, given, nargsf, kwnames);
    }
    Py_RETURN_NONE;
error:
    for (int k = 0; k < made; k++) {
        Py_DECREF(outputs[k]);
    }
    return NULL;
}

static int
parse_shape(PyObject *shape, Arg *arg)
{
    if (!PyTuple_Check(shape) || PyTuple_GET_SIZE(shape) > MAX_DIMS) {
        PyErr_SetString(PyExc_ValueError, "shape must be a tuple of at most 4 ints");
        return -1;
    }
    arg->ndim = (int)PyTuple_GET_SIZE(shape);
    for (int k = 0; k < arg->ndim; k++) {
        Py_ssize_t extent = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, k));
        if (extent < 0) {
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_ValueError, "shape extents must be >= 0");
            }
            return -1;
        }
        arg->shape[k] = (npy_intp)extent;
    }
    return 0;
}

static int
parse_arg(PyObject *item, Arg *arg)
{
    memset(arg, 0, sizeof(*arg));
    if (PyArray_Check(item)) {
        PyArrayObject *array = (PyArrayObject *)item;
        if (PyArray_NDIM(array) > MAX_DIMS || !PyArray_ISNOTSWAPPED(array)
            || !PyArray_IS_C_CONTIGUOUS(array) || !PyArray_ISALIGNED(array)) {
            PyErr_SetString(PyExc_ValueError,
                            "a bound array must be C-contiguous, aligned, native byte order");
            return -1;
        }
        arg->role = ROLE_BOUND;
        arg->typenum = PyArray_TYPE(array);
        arg->ndim = PyArray_NDIM(array);
        Py_INCREF(item);
        arg->bound = array;
        return 0;
    }
    const char *role;
    PyObject *dtype_object;
    PyObject *shape;
    if (!PyTuple_Check(item) || !PyArg_ParseTuple(item, "sOO", &role, &dtype_object, &shape)) {
        PyErr_SetString(PyExc_TypeError,
                        "each argument is a bound array or a (role, dtype, shape) tuple");
        return -1;
    }
    if (strcmp(role, "in") == 0) {
        arg->role = ROLE_IN;
    }
    else if (strcmp(role, "out") == 0) {
        arg->role = ROLE_OUT;
    }
    else {
        PyErr_Format(PyExc_ValueError, "role must be 'in' or 'out', got %s", role);
        return -1;
    }
    PyArray_Descr *descr = NULL;
    if (!PyArray_DescrConverter(dtype_object, &descr)) {
        return -1;
    }
    arg->typenum = descr->type_num;
    int native = PyArray_ISNBO(descr->byteorder);
    Py_DECREF(descr);
    if (!native) {
        PyErr_SetString(PyExc_ValueError, "dtype must be in native byte order");
        return -1;
    }
    return parse_shape(shape, arg);
}

static int
kernel_traverse(NativeKernel *self, visitproc visit, void *arg)
{
    Py_VISIT(self->fallback);
    for (int k = 0; k < self->count; k++) {
        Py_VISIT(self->args[k].bound);
    }
    return 0;
}

static int
kernel_clear(NativeKernel *self)
{
    Py_CLEAR(self->fallback);
    for (int k = 0; k < self->count; k++) {
        Py_CLEAR(self->args[k].bound);
    }
    return 0;
}

static void
kernel_dealloc(NativeKernel *self)
{
    PyObject_GC_UnTrack(self);
    kernel_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
kernel_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *address_object;
    PyObject *plan;
    PyObject *fallback = NULL;
    static char *keywords[] = {"address", "arguments", "fallback", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO!|O", keywords, &address_object,
                                     &PyTuple_Type, &plan, &fallback)) {
        return NULL;
    }
    if (fallback == Py_None) {
        fallback = NULL;
    }
    if (fallback != NULL && !PyCallable_Check(fallback)) {
        PyErr_SetString(PyExc_TypeError, "fallback must be callable");
        return NULL;
    }
    uintptr_t address = (uintptr_t)PyLong_AsUnsignedLongLong(address_object);
    if (PyErr_Occurred()) {
        return NULL;
    }
    if (address == 0) {
        PyErr_SetString(PyExc_ValueError, "the kernel address is 0");
        return NULL;
    }
    Py_ssize_t count = PyTuple_GET_SIZE(plan);
    if (count > MAX_ARGS) {
        PyErr_Format(PyExc_ValueError, "at most %d arguments", MAX_ARGS);
        return NULL;
    }
    NativeKernel *self = (NativeKernel *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->vectorcall = kernel_call;
    self->entry = (native_entry)address;
    Py_XINCREF(fallback);
    self->fallback = fallback;
    memset(self->plan, 0, sizeof(self->plan));
    int word = 0;
    for (Py_ssize_t k = 0; k < count; k++) {
        Arg *arg = &self->args[k];
        if (parse_arg(PyTuple_GET_ITEM(plan, k), arg) < 0) {
            Py_DECREF(self);
            return NULL;
        }
        self->count = (int)k + 1;
        arg->word = word;
        word += 5 + 2 * arg->ndim;
        if (word > MAX_WORDS) {
            PyErr_Format(PyExc_ValueError, "the arguments need more than %d words", MAX_WORDS);
            Py_DECREF(self);
            return NULL;
        }
        if (arg->role == ROLE_BOUND) {
            fill_words(self->plan + arg->word, arg->bound);
        }
        else if (arg->role == ROLE_IN) {
            self->inputs++;
        }
        else {
            self->outputs++;
        }
    }
    if (self->outputs == 0) {
        PyErr_SetString(PyExc_ValueError, "a NativeKernel needs at least one output");
        Py_DECREF(self);
        return NULL;
    }
    self->words = word;
    return (PyObject *)self;
}

static PyObject *
kernel_get_inputs(NativeKernel *self, void *closure)
{
    return PyLong_FromLong(self->inputs);
}

static PyGetSetDef kernel_getset[] = {
    {"inputs", (getter)kernel_get_inputs, NULL, "number of arrays a call takes", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject NativeKernelType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "runtime._compile._native.NativeKernel",
    .tp_basicsize = sizeof(NativeKernel),
    .tp_dealloc = (destructor)kernel_dealloc,
    .tp_vectorcall_offset = offsetof(NativeKernel, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = (traverseproc)kernel_traverse,
    .tp_clear = (inquiry)kernel_clear,
    .tp_doc = "NativeKernel(address, arguments, fallback=None): a kernel called natively.\n\n"
              "arguments: per kernel argument, a bound array or ('in' | 'out', dtype, shape).\n"
              "A call takes the 'in' arrays in order and returns the new 'out' array (one)\n"
              "or a tuple of them. When an input does not match or the kernel fails, it\n"
              "returns fallback(*arguments), or None without a fallback.",
    .tp_new = kernel_new,
    .tp_getset = kernel_getset,
};

static struct PyModuleDef native_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "runtime._compile._native",
    .m_doc = "Compiled kernels called through their native entry points.",
    .m_size = -1,
};

PyMODINIT_FUNC
PyInit__native(void)
{
    import_array();
    if (PyType_Ready(&NativeKernelType) < 0) {
        return NULL;
    }
    PyObject *module = PyModule_Create(&native_module);
    if (module == NULL) {
        return NULL;
    }
    Py_INCREF(&NativeKernelType);
    if (PyModule_AddObject(module, "NativeKernel", (PyObject *)&NativeKernelType) < 0) {
        Py_DECREF(&NativeKernelType);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
